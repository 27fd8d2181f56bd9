// One command waits out an outage of its engine (issue 44): podman's service
// stopped and started again (a package upgrade, a crash, an out-of-memory
// kill), or a Kubernetes API server restarting. A session's command
// (session.h) that meets one waits for the engine to answer again, within
// the command's own timeout, and then carries on, instead of failing at once;
// eval's workers share a wait of their own (eval/eval_outage.h), which logs
// its outages the same way.
//
// While it waits it asks the engine (Engine::after_outage, which also removes
// what runs cut short left behind) with a backoff from 250 ms, doubling up to
// 5 s, and says so twice: as the outage begins ("podman unreachable since
// 01:02:03, waiting (up to 120 s, the command's timeout): ...") and as it ends
// ("podman answers again after 3.2 s").
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "util/progress.h"
#include "util/result.h"

namespace lazyagent {

// An outage waited out (or given up on).
struct EngineOutageLog {
  std::time_t began = 0;  // wall clock
  long ms = 0;            // how long it lasted (or was waited for before giving up)
  bool gave_up = false;
};

// {"since": "2026-12-07T04:10:00Z", "ms": 3210, "gave_up": false}
nlohmann::json outage_log_json(const EngineOutageLog& o);

// "01:02:03", local time: how progress lines and tables name a moment.
std::string clock_time(std::time_t t);

class EngineWait {
 public:
  // `budget_seconds`: how long one outage may be waited for, named by
  // `budget_name` ("the command's timeout"); `say`: where the two lines go.
  EngineWait(Engine& engine, long budget_seconds, std::string budget_name, ProgressFn say)
      : engine_(engine), budget_seconds_(budget_seconds), budget_name_(std::move(budget_name)), say_(std::move(say)) {}

  // `e` (kUnreachable) was met: ok once the engine answers again; an error of
  // kind kUnreachable once the budget passes ("<engine> stayed unreachable for
  // more than 120 s (the command's timeout): <e>"); kInterrupted on a signal.
  Status ride_out(const Error& e);

  const std::vector<EngineOutageLog>& log() const { return log_; }

  static constexpr long kFirstCheckMs = 250;
  static constexpr long kMaxCheckMs = 5000;

 private:
  Engine& engine_;
  const long budget_seconds_;
  const std::string budget_name_;
  ProgressFn say_;
  std::vector<EngineOutageLog> log_;
};

}  // namespace lazyagent
