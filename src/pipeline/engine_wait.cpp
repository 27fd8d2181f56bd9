#include "pipeline/engine_wait.h"

#include <algorithm>
#include <thread>

#include "util/elapsed.h"
#include "util/interrupt.h"

namespace lazyagent {

nlohmann::json outage_log_json(const EngineOutageLog& o) {
  char since[32];
  std::tm tm {};
  gmtime_r(&o.began, &tm);
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {{"since", since}, {"ms", o.ms}, {"gave_up", o.gave_up}};
}

std::string clock_time(std::time_t t) {
  std::tm tm {};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

namespace {

std::string wait_seconds_text(long ms) { return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s"; }

// Sleeps `ms` in short naps, waking for a signal.
void wait_nap(long ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until && interrupted_signal() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

Status EngineWait::ride_out(const Error& e) {
  const auto t0 = std::chrono::steady_clock::now();
  EngineOutageLog o;
  o.began = std::time(nullptr);
  const std::string who = engine_.name();
  bool announced = false;
  long backoff = kFirstCheckMs;
  for (;;) {
    if (auto st = check_interrupted(); !st) return st;
    Status st = engine_.after_outage();
    if (st || st.error().kind != ErrorKind::kUnreachable) {
      // (A leftover it could not remove is `reap`'s to remove later.)
      o.ms = ms_since(t0);
      if (announced) {
        log_.push_back(o);
        if (say_) say_(who + " answers again after " + wait_seconds_text(o.ms) + "; carrying on");
      }
      return ok_status();
    }
    // A blip over by the first check (a connection the service closed as it
    // restarted) is no outage to announce.
    if (!announced) {
      announced = true;
      if (say_) {
        say_(who + " unreachable since " + clock_time(o.began) + ", waiting (up to " + std::to_string(budget_seconds_) +
             " s, " + budget_name_ + "): " + e.message);
      }
    }
    const long left_ms = budget_seconds_ * 1000 - ms_since(t0);
    if (left_ms <= 0) {
      o.ms = ms_since(t0);
      o.gave_up = true;
      log_.push_back(o);
      return Error{ErrorKind::kUnreachable, who + " stayed unreachable for more than " +
                                                std::to_string(budget_seconds_) + " s (" + budget_name_ + "): " +
                                                st.error().message};
    }
    wait_nap(std::min(backoff, left_ms));
    backoff = std::min(backoff * 2, kMaxCheckMs);
  }
}

}  // namespace lazyagent
