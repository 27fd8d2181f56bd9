// `lazyagent-oci test`: prove one patch against a seed in a fresh sandbox.
//
// The pipeline, as named steps (each timed, each announced on the progress
// callback):
//   validate   the patch against the contract (refusal => no container)
//   snapshot   read the seed (no symlink following), check the patch fits it
//   engine     ping podman, check its API version, reap crashed runs' leftovers
//   image      inspect the sandbox image (digest for the record)
//   copy       write seed + patch into a private directory of the run store
//   create     POST containers/create with the policy's request
//   verify     init, then read inspect + the generated OCI spec; refuse on
//              any difference from the policy
//   queue      (eval only) wait for a free run slot (TestRequest::acquire_run_slot)
//   run        start, wait with the host-side deadline (kill on timeout)
//   logs       read bounded, demultiplexed output
//   remove     delete the container and confirm it is gone; delete the copy
//   verdict    exit status + the runner's report (verdict.h)
// The container and the private copy are owned by scope guards: every path
// out of this function (error, timeout, signal) removes them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "patch_contract.h"
#include "podman_client.h"
#include "result.h"
#include "run_store.h"
#include "test_report.h"

namespace lazyagent {

struct TestRequest {
  Config config;                 // effective config (CLI flags already applied)
  std::string patch_json;        // the patch text, untrusted
  std::int64_t timeout_seconds = 120;
  std::string run_id;            // "" = generate
  nlohmann::json planner;        // set by `run`: the planner task's record
  bool baseline = false;         // run the seed unpatched (patch_json unused): triage_run.h
  // Optional (`eval`, eval_runner.h): called before the sandbox starts, as
  // its own timed step "queue" (it may block until a run slot is free; an
  // error, e.g. interrupted, ends the run), and once after the sandbox has
  // exited or been killed. Other runs' create/verify/remove steps overlap.
  std::function<Status()> acquire_run_slot;
  std::function<void()> release_run_slot;
  // `eval` pings podman, checks its version and reaps crashed runs once for
  // the whole batch; its runs then skip that part of the "engine" step.
  bool engine_checked = false;
};

struct StepTiming {
  std::string step;
  long ms = 0;
};

struct TestResult {
  std::string run_id;
  std::string status;            // passed | failed | refused
  std::string sandbox_id;
  std::vector<std::string> changed_paths;
  int test_exit_code = -1;
  std::string test_output;       // bounded, valid UTF-8 (may hold control chars)
  bool test_output_truncated = false;
  bool tests_passed = false;
  std::string reason;            // why not passed
  std::string image;
  std::string image_digest;
  nlohmann::json policy;
  std::vector<StepTiming> timings;
  std::vector<Finding> findings; // contract findings when refused
  std::vector<Finding> suspicious; // suspicious_code.h findings of the patch (not refusals unless configured)
  bool baseline = false;         // the seed unpatched: no patch, no `suspicious`
  std::string seed_sha256;
  std::string patch_sha256;
  nlohmann::json planner;        // null for `test`
  nlohmann::json isolation_probe; // what the sandbox saw (isolation_probe.h)
  TestCases tests;               // per-test results from the runner's output (test_report.h)
  std::string category;          // set by run_judged_test: passed|failed|flaky|refused
  nlohmann::json triage;         // set by run_judged_test (triage_run.h); null otherwise
  nlohmann::json repair;         // set by `run --attempts`: attempts, stop_reason, total_usage (merged into the JSON)
};

nlohmann::json result_to_json(const TestResult& r);

// The run-store record of a finished result (what run_test writes at its end).
Status write_result_record(const RunStore& store, const TestRequest& req, const TestResult& r);

// Engine failures worth one retry (podman errors, its timeouts, a missing
// image): kEngine/kTimeout, except an isolation probe violation, which is a
// finding about the engine's configuration and is never retried.
bool is_infra_error(const Error& e);
bool is_isolation_violation(const Error& e);

using ProgressFn = std::function<void(const std::string&)>;

// Engine failures are Errors (kEngine); a refused patch or a failing test is
// a TestResult. The run record is written at the start and at the end.
Result<TestResult> run_test(const TestRequest& req, PodmanClient& podman, const RunStore& store,
                            const ProgressFn& progress);

}  // namespace lazyagent
