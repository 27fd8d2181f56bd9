// How the attempts at one eval task become its category.
//
// This is the one place that decides retries and flakiness, so a finer policy
// (per-test reruns and triage inside the pipeline, sandbox_run.h) can replace
// it without touching the runner:
//   - an infrastructure failure (any Error from the pipeline: podman, the
//     image, the seed, the planner) is retried `infra_retries` times; if it
//     persists the task is `infra_error` (or `failed` when an earlier run of
//     it already failed its tests), never a test failure;
//   - an isolation violation (kIsolation: the effective config or a probe
//     broke the policy) is `isolation_violation`: a finding about the
//     engine, never retried, never re-run by a resumed eval;
//   - a refused patch is `refused` (deterministic: never rerun);
//   - failing tests are rerun up to `reruns` times; a pass on a rerun makes
//     the task `flaky`, no pass leaves it `failed`;
//   - SIGINT/SIGTERM (kInterrupted) stops at once: the task has no category
//     and is not recorded, so a resumed eval runs it again;
//   - the engine unreachable (kUnreachable: its service stopped or restarted
//     under the attempt) is an outage, not a fault of the task: `ride_out`
//     waits for the engine (eval_outage.h), then the attempt runs again from
//     the start, counting neither as an attempt nor as a retry (at most
//     kMaxOutageReruns times a task, then it is an ordinary infrastructure
//     failure); when the wait passes its limit the task is `not_run`: no
//     category, no record, and a resumed eval runs it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "util/result.h"
#include "pipeline/run_result.h"

namespace lazyagent {

// A task's category is the pipeline's Category (run_result.h): one type and
// one string mapping for `test`, `run`, `eval` and the reports.

struct AttemptPolicy {
  int reruns = 0;         // --rerun K: extra runs of a failing task
  int infra_retries = 1;  // extra runs after an infrastructure failure
};

struct AttemptLog {
  std::string outcome;  // a category name: "passed", "failed", "refused", "infra_error", ...
  std::string detail;   // the reason or the error message
  std::string run_id;
};

// Runs of one task an outage cut short, run again from the start after it.
inline constexpr int kMaxOutageReruns = 3;

struct TaskVerdict {
  bool interrupted = false;
  bool not_run = false;  // the engine stayed unreachable past the wait: no verdict
  std::vector<AttemptLog> outages;  // the runs an outage cut short (outcome "engine_unreachable")
  Category category = Category::kInfraError;
  Result<RunResult> final = Error{ErrorKind::kEngine, "no attempt ran"};  // the reported run
  std::vector<AttemptLog> attempts;
};

using AttemptFn = std::function<Result<RunResult>()>;
// Called with an attempt's kUnreachable error: ok once the engine answers
// again (run it again); kUnreachable when the wait passed its limit
// (not_run); kInterrupted on SIGINT/SIGTERM.
using RideOutFn = std::function<Status(const Error&)>;

// `ride_out` null: an outage is an infrastructure failure like any other.
TaskVerdict run_attempts(const AttemptFn& attempt, const AttemptPolicy& policy, const RideOutFn& ride_out = nullptr);

}  // namespace lazyagent
