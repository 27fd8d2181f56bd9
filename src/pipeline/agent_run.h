// `lazyagent-oci run`: the whole job, on any engine (engine.h). Ask the
// planner for a patch (in its own container or pod, the only one with the
// provider secrets), validate the patch again with the same contract, prove
// it in a fresh sandbox, report.
//
//   baseline  the seed's tests unpatched, in a sandbox (or from the cache)
//   plan      build the task from the seed; run the planner container
//   (then the `test` pipeline of sandbox_run.h, with the planner's patch,
//   judged with the baseline, re-runs and triage of triage_run.h)
//
// The baseline (the unpatched seed's tests, triage_run.h) runs first, before
// the planner (config planner.baseline_first, on with the baseline): the task
// gets its failing tests and the files their output names, and the judge
// reuses it. A provider failure (exit 3) then ends the run before any sandbox
// for a patch exists; so does a refused reply (exit 4) of the last attempt.
//
// The repair loop (`--attempts N`): when an attempt does not pass, the next
// planner task carries its feedback (planner_task.h: the reason with the
// triage, its patch, the bounded and escaped test output), and the next patch
// is proven in a fresh sandbox. Every attempt has its own run id and record.
// The loop stops at the first pass, after N attempts, or when the provider
// tokens used reach `max_tokens`; the result is the last attempt's, with
// `attempts` (one entry per attempt), `stop_reason` and `total_usage` added.
#pragma once

#include <string>

#include "config.h"
#include "engine/engine.h"
#include "util/result.h"
#include "store/run_store.h"
#include "pipeline/sandbox_run.h"
#include "pipeline/triage_run.h"

namespace lazyagent {

struct RunRequest {
  Config config;
  std::string instruction;  // "" = the default
  std::int64_t timeout_seconds = 120;
  int attempts = 1;             // planner + sandbox rounds
  std::int64_t max_tokens = 0;  // ceiling on provider tokens over all attempts; 0 = none
  JudgeOptions judge;           // baseline, re-runs, infra retry
  RunEventFn events;            // optional: steps (the planner's "plan" too) and output (run_events.h)
  std::shared_ptr<const SigningKey> signer;  // optional: each attempt's verdict is signed (attest_run.h)
};

// `engine_checked`: the caller (eval) checked the engine and reaped already.
Result<RunResult> run_agent(const RunRequest& req, Engine& engine, const RunStore& store,
                             const ProgressFn& progress, bool engine_checked = false);

}  // namespace lazyagent
