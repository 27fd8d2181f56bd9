#include "eval/eval_outage.h"

#include <algorithm>
#include <thread>

#include "util/elapsed.h"
#include "util/interrupt.h"

namespace lazyagent {

namespace {
// The task's error as triage_run words it for a verdict ("infra_error (not a
// test failure...): "): the outage line says what it is already.
std::string without_verdict_prefix(const std::string& error) {
  const std::string head = "infra_error (not a test failure";
  if (error.rfind(head, 0) != 0) return error;
  const auto end = error.find("): ");
  return end == std::string::npos ? error : error.substr(end + 3);
}
}  // namespace

std::string outage_line(const OutageEvent& e) {
  const std::string since = "engine unreachable since " + clock_time(e.outage.began);
  const std::string waited = std::to_string(e.outage.ms / 1000) + "." + std::to_string(e.outage.ms % 1000 / 100) + " s";
  switch (e.kind) {
    case OutageEvent::Kind::kUnreachable:
      return since + ", waiting (up to " + std::to_string(e.wait_seconds) + " s, eval.engine_wait_seconds): " + without_verdict_prefix(e.error);
    case OutageEvent::Kind::kBack:
      return "engine answers again after " + waited + " (" + since +
             "); carrying on, tasks it cut short run again from the start";
    case OutageEvent::Kind::kGaveUp:
      return since + ": gave up after " + waited + " (eval.engine_wait_seconds " + std::to_string(e.wait_seconds) +
             (e.before_tasks ? "); nothing was run: rerun once the engine answers"
                             : "); the tasks not run are not_run: rerun with the same --out once the engine answers");
  }
  return since;
}

void EngineOutage::begin(const std::string& error) {
  active_ = true;
  began_ = std::chrono::steady_clock::now();
  first_error_ = error;
  EngineOutageLog o;
  o.began = std::time(nullptr);
  log_.push_back(o);
  if (observer_) observer_({OutageEvent::Kind::kUnreachable, o, wait_seconds_, error});
}

Status EngineOutage::ride_out(Engine& engine, const Error& e) {
  bool active = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gave_up_) return Error{ErrorKind::kUnreachable, "the engine stayed unreachable: " + first_error_};
    active = active_;
  }
  // A blip over by now (a connection the service closed as it restarted)
  // is no outage to announce: the attempt just runs again.
  if (!active) {
    if (Status st = engine.after_outage(); st || st.error().kind != ErrorKind::kUnreachable) return ok_status();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!active_ && !gave_up_) begin(e.message);
  }
  return wait(engine);
}

bool EngineOutage::ready(Engine& engine) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gave_up_) return false;
    if (!active_) return true;
  }
  return wait(engine).ok();
}

Status EngineOutage::wait(Engine& engine) {
  long backoff = kFirstCheckMs;
  for (;;) {
    if (auto st = check_interrupted(); !st) return st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gave_up_) return Error{ErrorKind::kUnreachable, "the engine stayed unreachable: " + first_error_};
    }
    // Each worker asks its own engine, also when another saw the outage end:
    // that clears what its own runs left (Engine::after_outage).
    Status st = engine.after_outage();
    if (st || st.error().kind != ErrorKind::kUnreachable) {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_) {
        active_ = false;
        log_.back().ms = ms_since(began_);
        if (observer_) observer_({OutageEvent::Kind::kBack, log_.back(), wait_seconds_, ""});
      }
      return ok_status();  // (a leftover that could not be removed: `reap` removes it later)
    }
    long left_ms = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Another worker saw it answer, yet this one's engine does not: away again.
      if (!active_ && !gave_up_) begin(st.error().message);
      const long waited = ms_since(began_);
      left_ms = wait_seconds_ * 1000 - waited;
      if (left_ms <= 0 && !gave_up_) {
        gave_up_ = true;
        log_.back().ms = waited;
        log_.back().gave_up = true;
        if (observer_) observer_({OutageEvent::Kind::kGaveUp, log_.back(), wait_seconds_, first_error_, !tasks_started_});
      }
      if (gave_up_) return Error{ErrorKind::kUnreachable, "the engine stayed unreachable: " + st.error().message};
    }
    nap(std::min(backoff, left_ms));
    backoff = std::min(backoff * 2, kMaxCheckMs);
  }
}

void EngineOutage::nap(long ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (interrupted_signal() != 0) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!active_ || gave_up_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void EngineOutage::tasks_begin() {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_started_ = true;
}

bool EngineOutage::gave_up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gave_up_;
}

std::vector<EngineOutageLog> EngineOutage::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

}  // namespace lazyagent
