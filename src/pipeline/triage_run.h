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
#pragma once

#include "engine/engine.h"
#include "util/result.h"
#include "pipeline/run_store.h"
#include "pipeline/sandbox_run.h"

namespace lazyagent {

struct JudgeOptions {
  bool baseline = true;  // compare with the unpatched seed
  int rerun = 0;         // re-run a failing verdict up to this many times
  int infra_retries = 1;
};

Result<TestResult> run_judged_test(const TestRequest& req, const JudgeOptions& opt, Engine& engine,
                                   const RunStore& store, const ProgressFn& progress);

// The baseline cache key (pure).
std::string baseline_key(const std::string& seed_sha256, const std::string& test_command,
                         const std::string& image_digest, const std::string& runtime = "");

}  // namespace lazyagent
