// What proving a patch yields, whatever the engine: the result every
// pipeline returns (`test`, `run`, `eval`, on podman and on Kubernetes), its
// status and category as enums with one string mapping each, the progress
// callback, and the one builder of the run record the run store keeps.
//
// Statuses (`status` in results and records):
//   running, planning        a record written while the run is under way
//   passed, failed, refused  a finished run's verdict (tests_passed decides
//                            passed; refused: the contract said no)
//   planner_error            the planner did not produce a patch
//   error, interrupted       an Error ended the run (engine, signal)
// Categories (`category`, set once the verdict is judged with its baseline,
// re-runs and infra retries, triage_run.h; or from the Error that ended it):
//   passed, failed, flaky, refused, infra_error, isolation_violation
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "contract/patch_contract.h"
#include "util/progress.h"
#include "util/result.h"
#include "contract/test_report.h"
#include "contract/verdict.h"

namespace lazyagent {

enum class RunStatus { kRunning, kPlanning, kPassed, kFailed, kRefused, kPlannerError, kError, kInterrupted };
const char* status_name(RunStatus s);

enum class Category { kNone, kPassed, kFailed, kFlaky, kRefused, kInfraError, kIsolationViolation };
const char* category_name(Category c);  // "" for kNone
// The inverse: false for "" and for an unknown name.
bool category_from_name(const std::string& name, Category* out);
// Every category a finished run or eval task can have, in report order.
inline constexpr Category kAllCategories[] = {Category::kPassed,  Category::kFailed,     Category::kRefused,
                                              Category::kInfraError, Category::kFlaky,
                                              Category::kIsolationViolation};
inline constexpr std::size_t kCategoryCount = static_cast<std::size_t>(Category::kIsolationViolation) + 1;

// The category of a run that an Error ended: isolation_violation, infra_error
// (engine failures and their timeouts), or none (usage, planner, signal).
Category category_of(const Error& e);
// Engine failures worth one retry in a fresh sandbox: kEngine and kTimeout.
// An isolation violation (kIsolation) is a finding, never retried.
bool is_infra_error(const Error& e);

struct StepTiming {
  std::string step;
  long ms = 0;
};

struct RunResult {
  std::string run_id;
  RunStatus status = RunStatus::kRunning;
  std::string sandbox_id;        // podman: the container id; Kubernetes: namespace/pod
  std::vector<std::string> changed_paths;
  int test_exit_code = -1;
  std::string test_output;       // bounded, valid UTF-8 (may hold control chars)
  bool test_output_truncated = false;
  bool tests_passed = false;
  std::string reason;            // why not passed
  std::string image;
  std::string image_digest;
  nlohmann::json environment;   // environment.h: key, image, digest, built, build_ms (null: none)
  nlohmann::json policy;
  std::vector<StepTiming> timings;
  std::vector<Finding> findings; // contract findings when refused
  std::vector<Finding> suspicious; // suspicious_code.h findings of the patch (not refusals unless configured)
  bool baseline = false;         // the seed unpatched: no patch, no `suspicious`
  std::string seed_sha256;
  std::string patch_sha256;
  std::string patch_format;      // files | diff ("" for a baseline)
  nlohmann::json change;         // change_summary_json: diff_stats, changed_files (null when refused)
  std::string diff_sha256;       // of the proven change as a unified diff (artifacts/<id>.diff)
  nlohmann::json seed_source;    // seed_source_json: kind, exclude, include_git, ...
  nlohmann::json planner;        // the planner task's record; null for `test`
  nlohmann::json isolation_probe; // what the sandbox saw (isolation_probe.h)
  nlohmann::json warm;           // the warm spare the run claimed (warm_spares.h); null: made for it
  std::string removal;           // "deferred": removed after the result was printed (engine.warm)
  nlohmann::json resources;      // what it used (Sandbox::resources; null: no sandbox ran)
  TestCases tests;               // per-test results from the runner's output (test_report.h)
  RunnerReport runner;           // the runner's closing report the verdict read (verdict.h)
  std::string evidence;          // what decided the verdict: "driver", "junit" or "output" (runner_driver.h)
  std::string evidence_note;     // why `report: auto` kept the output ("" otherwise)
  Category category = Category::kNone;  // set by prove_judged (or the refusal)
  nlohmann::json triage;         // set by prove_judged (triage_run.h); null otherwise
  nlohmann::json attestation;    // {path, keyid, sha256} of the signed verdict (attest_run.h); null: unsigned
  std::string attestation_envelope;  // the envelope's line: in the record (durable), not in the result
  // The record's provenance as last written (provenance.h): what `verify`
  // checks, in the result too. Set by whoever writes the record.
  nlohmann::json provenance;
  nlohmann::json repair;         // set by `run --attempts`: attempts, stop_reason, total_usage (merged into the JSON)
};

// The result's `environment` object (engine/podman/environment.h): key,
// image, digest, built, build_ms; null without an environment.
nlohmann::json environment_json(const EnvironmentConfig& env);

// What `test --json` / `run --json` print.
nlohmann::json result_to_json(const RunResult& r);

enum class RunKind { kTest, kRun, kBaseline };

// Fields of a run record that are not in the result.
struct RecordInfo {
  RunKind kind = RunKind::kTest;
  std::string seed;              // the seed directory
  std::string test_command;
  std::string error;             // the Error that ended the run ("" = none)
  Category category = Category::kNone;  // overrides the result's (an Error's category)
  std::string backend;           // the engine's name: "podman", "k8s"
};

// The run record (run_store.h): the result's JSON plus kind, owner, seed,
// test command, time, error, the backend and the provenance
// (provenance.h). The one builder of records, for every engine and step.
nlohmann::json run_record(const RunResult& r, const RecordInfo& info);

}  // namespace lazyagent
