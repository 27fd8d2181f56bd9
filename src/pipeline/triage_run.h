// Judging a patch with evidence, on any engine: one sandbox run (sandbox_run.h) plus
//   infra retry  an infrastructure failure (podman error, podman timeout,
//                missing image) is retried once with a fresh sandbox; if it
//                fails again it is an Error (exit 5, category infra_error),
//                never a test failure
//   reruns       a failing verdict is re-run up to `rerun` times, each in a
//                fresh sandbox; a test whose outcome differs between runs is
//                flaky; a re-run that passes makes the verdict a pass with
//                category "flaky" (the patch is not blamed for a coin toss)
//   baseline     the seed's tests unpatched, in a sandbox, cached in the run
//                store (baselines/<key>.json, key = sha256 of the seed
//                snapshot's content hash, the test command, the evidence mode (config.report), the image
//                digest and the runtime: runc, runsc, k8s:<RuntimeClass>)
//   triage       per test (test_report.h): fixed, still failing, newly
//                broken, passing, flaky. A pass that leaves a test newly
//                broken or a failing test skipped is not a pass, nor is one
//                whose runner counted fewer tests than the baseline's did
//                (same runner and unit, verdict.h): "fewer tests: ...".
// Every sandbox run is a run record of its own; the returned result is the
// deciding run (the first passing one, else the first) with `triage` holding
// the baseline, every run, and the per-test lists.
//
// `run` runs the baseline first (run_baseline, before the planner, config
// planner.baseline_first): the planner's task gets its failing tests and the
// tail of its output, and the judge then reuses it (JudgeOptions::known).
#pragma once

#include <memory>
#include <optional>

#include "contract/runner_report.h"
#include "contract/test_report.h"
#include "engine/engine.h"
#include "util/result.h"
#include "store/run_store.h"
#include "pipeline/sandbox_run.h"

namespace lazyagent {

// The unpatched seed's run as the judge and the planner see it.
struct Baseline {
  bool ok = false;
  bool cached = false;
  nlohmann::json summary;  // what goes into triage.baseline
  TestCases cases;
  RunnerReport runner;  // found=false when unknown (no report, or a cache from before it was kept)
  // The last kBaselineOutputBytes of its output (valid UTF-8, not escaped:
  // untrusted, the planner task escapes it). Kept in the cache, not in the record.
  std::string output_tail;
  // The engine went away while it ran (kUnreachable): no verdict is judged
  // without it; the judgement ends with this error (the run is cut short,
  // not a run without a baseline).
  std::optional<Error> outage;
};

inline constexpr std::size_t kBaselineOutputBytes = 8000;

struct JudgeOptions {
  bool baseline = true;  // compare with the unpatched seed
  int rerun = 0;         // re-run a failing verdict up to this many times
  int infra_retries = 1;
  std::shared_ptr<const Baseline> known;  // run already (run_baseline): not run again
};

// The baseline before any patch exists (`req` without a patch): read from
// the cache when the key (seed_sha256, the test command, the sandbox image's
// digest and the runtime, known before a run on podman) has an entry that
// kept the output's tail, else run in a sandbox and cached. ok=false with
// summary.error when it could not run; an interrupt is an Error.
Result<Baseline> run_baseline(const ProofRequest& req, const std::string& seed_sha256, const JudgeOptions& opt,
                              Engine& engine, const RunStore& store, const ProgressFn& progress);

Result<RunResult> prove_judged(const ProofRequest& req, const JudgeOptions& opt, Engine& engine,
                                   const RunStore& store, const ProgressFn& progress);

// The baseline cache key (pure).
std::string baseline_key(const std::string& seed_sha256, const std::string& test_command,
                         const std::string& image_digest, const std::string& runtime = "");

}  // namespace lazyagent
