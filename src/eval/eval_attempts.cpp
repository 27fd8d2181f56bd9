#include "eval/eval_attempts.h"

#include <optional>

namespace lazyagent {

const char* category_name(EvalCategory c) {
  switch (c) {
    case EvalCategory::kPassed: return "passed";
    case EvalCategory::kFailed: return "failed";
    case EvalCategory::kRefused: return "refused";
    case EvalCategory::kInfraError: return "infra_error";
    case EvalCategory::kFlaky: return "flaky";
  }
  return "infra_error";
}

bool category_from_name(const std::string& name, EvalCategory* out) {
  for (EvalCategory c : kAllCategories) {
    if (name == category_name(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

TaskVerdict run_attempts(const AttemptFn& attempt, const AttemptPolicy& policy) {
  TaskVerdict v;
  int infra_left = policy.infra_retries;
  int reruns_left = policy.reruns;
  bool failed_before = false;
  std::optional<TestResult> last_failed;
  for (;;) {
    Result<TestResult> r = attempt();
    if (!r) {
      if (r.error().kind == ErrorKind::kInterrupted) {
        v.interrupted = true;
        v.final = r.error();
        return v;
      }
      v.attempts.push_back({"infra_error", r.error().message, ""});
      v.final = r.error();
      // An isolation violation is a finding about the engine, never retried.
      if (r.error().kind != ErrorKind::kIsolation && infra_left-- > 0) continue;
      // A task whose tests already failed stays a test failure: the
      // infrastructure broke only on a rerun.
      if (last_failed) {
        v.category = EvalCategory::kFailed;
        v.final = std::move(*last_failed);
        return v;
      }
      v.category = EvalCategory::kInfraError;
      return v;
    }
    const TestResult& t = *r;
    if (t.status == RunStatus::kRefused) {
      v.attempts.push_back({"refused", t.reason, t.run_id});
      v.category = EvalCategory::kRefused;
      v.final = std::move(r);
      return v;
    }
    if (t.tests_passed) {
      v.attempts.push_back({"passed", "", t.run_id});
      v.category = failed_before ? EvalCategory::kFlaky : EvalCategory::kPassed;
      v.final = std::move(r);
      return v;
    }
    v.attempts.push_back({"failed", t.reason, t.run_id});
    failed_before = true;
    last_failed = t;
    v.final = std::move(r);
    if (reruns_left-- > 0) continue;
    v.category = EvalCategory::kFailed;
    return v;
  }
}

}  // namespace lazyagent
