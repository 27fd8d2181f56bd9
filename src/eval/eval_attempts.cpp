#include "eval/eval_attempts.h"

#include <optional>

namespace lazyagent {

TaskVerdict run_attempts(const AttemptFn& attempt, const AttemptPolicy& policy, const RideOutFn& ride_out) {
  TaskVerdict v;
  int infra_left = policy.infra_retries;
  int outages_left = kMaxOutageReruns;
  int reruns_left = policy.reruns;
  bool failed_before = false;
  std::optional<RunResult> last_failed;
  for (;;) {
    Result<RunResult> r = attempt();
    if (!r) {
      if (r.error().kind == ErrorKind::kInterrupted) {
        v.interrupted = true;
        v.final = r.error();
        return v;
      }
      if (r.error().kind == ErrorKind::kUnreachable && ride_out && outages_left-- > 0) {
        const std::string* run_id = r.error().id("run_id");
        v.outages.push_back({error_kind_name(ErrorKind::kUnreachable), r.error().message, run_id ? *run_id : ""});
        const Status back = ride_out(r.error());
        if (back) continue;  // the engine answers: the whole attempt again
        v.interrupted = back.error().kind == ErrorKind::kInterrupted;
        v.not_run = !v.interrupted;
        v.final = back.error();
        return v;
      }
      const Category c = category_of(r.error());
      v.attempts.push_back({category_name(c == Category::kNone ? Category::kInfraError : c), r.error().message, ""});
      v.final = r.error();
      // An isolation violation is a finding about the engine, never retried,
      // and it outranks an earlier test failure.
      if (c == Category::kIsolationViolation) {
        v.category = Category::kIsolationViolation;
        return v;
      }
      if (infra_left-- > 0) continue;
      // A task whose tests already failed stays a test failure: the
      // infrastructure broke only on a rerun.
      if (last_failed) {
        v.category = Category::kFailed;
        v.final = std::move(*last_failed);
        return v;
      }
      v.category = Category::kInfraError;
      return v;
    }
    const RunResult& t = *r;
    if (t.status == RunStatus::kRefused) {
      v.attempts.push_back({"refused", t.reason, t.run_id});
      v.category = Category::kRefused;
      v.final = std::move(r);
      return v;
    }
    if (t.tests_passed) {
      v.attempts.push_back({"passed", "", t.run_id});
      v.category = failed_before ? Category::kFlaky : Category::kPassed;
      v.final = std::move(r);
      return v;
    }
    v.attempts.push_back({"failed", t.reason, t.run_id});
    failed_before = true;
    last_failed = t;
    v.final = std::move(r);
    if (reruns_left-- > 0) continue;
    v.category = Category::kFailed;
    return v;
  }
}

}  // namespace lazyagent
