// An eval rides out an outage of its engine (issue 44): podman's service
// stopped and started again (a package upgrade, a crash, an out-of-memory
// kill) must not turn every task that meets it into an infra_error.
//
// One EngineOutage is shared by the eval's workers. An outage begins when a
// worker's attempt fails with an error of kind kUnreachable (podman_client.h:
// connection refused, the socket gone, the connection broken mid-call, a
// 502/503/504); from then on:
//   - no new task starts: each worker, before it takes a task, waits;
//   - every waiting worker asks its own engine (Engine::after_outage, which
//     also removes what its cut-short runs left, e.g. a sandbox that outlived
//     the restart) with a backoff from 250 ms, doubling up to 5 s;
//   - the first answer ends the outage for all: the workers carry on, and a
//     task an outage cut short runs again from the start (eval_attempts.h);
//   - when `wait_seconds` pass since the outage began, the eval gives up:
//     no task starts again, a task waiting is not_run (no result file), and
//     a resumed eval runs exactly those.
// The observer hears of each outage once as it begins (kUnreachable), and
// once as it ends (kBack) or as the eval gives up (kGaveUp).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "eval/eval_summary.h"
#include "util/result.h"

namespace lazyagent {

struct OutageEvent {
  enum class Kind { kUnreachable, kBack, kGaveUp };
  Kind kind = Kind::kUnreachable;
  EngineOutageLog outage;   // so far (ms: since it began)
  std::int64_t wait_seconds = 0;
  std::string error;        // what the first worker met (kUnreachable)
  bool before_tasks = false;  // no task had been handed out yet (the eval's start)
};

// "engine unreachable since 01:02:03, waiting (up to 600 s): <error>" and the
// lines for kBack and kGaveUp: what the progress line and the events say.
std::string outage_line(const OutageEvent& e);

class EngineOutage {
 public:
  using Observer = std::function<void(const OutageEvent&)>;
  // `observer` is called with the lock held: one call at a time.
  EngineOutage(std::int64_t wait_seconds, Observer observer)
      : wait_seconds_(wait_seconds), observer_(std::move(observer)) {}

  // An attempt met the outage (`e`, kUnreachable): waits until `engine`
  // answers again (ok: run it again) or the wait passes (the outage's error,
  // kUnreachable: not run), or SIGINT/SIGTERM (kInterrupted).
  Status ride_out(Engine& engine, const Error& e);
  // Before a task starts: ok at once when there is no outage; else as
  // ride_out. False: the eval gave up (or a signal came): start nothing.
  bool ready(Engine& engine);

  bool gave_up() const;
  // The eval hands out tasks from now on (an outage before this, given up
  // on, leaves nothing run and no summary).
  void tasks_begin();
  std::vector<EngineOutageLog> log() const;

  // The backoff between checks: first, then doubled, at most max.
  static constexpr long kFirstCheckMs = 250;
  static constexpr long kMaxCheckMs = 5000;

 private:
  Status wait(Engine& engine);
  // An outage begins now (mu_ held): logged, the observer told.
  void begin(const std::string& error);
  // Sleeps up to `ms`, waking early when the outage ends, the eval gives up
  // or a signal arrives.
  void nap(long ms);

  const std::int64_t wait_seconds_;
  Observer observer_;
  mutable std::mutex mu_;
  bool active_ = false;
  bool gave_up_ = false;
  bool tasks_started_ = false;
  std::chrono::steady_clock::time_point began_;
  std::string first_error_;
  std::vector<EngineOutageLog> log_;  // the last one is the current one while active_
};

}  // namespace lazyagent
