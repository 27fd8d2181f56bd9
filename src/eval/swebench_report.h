// An eval's results as a SWE-bench-style report (`eval --report swebench:PATH`).
//
// SWE-bench's harness writes, per instance, {"patch_is_None", "patch_exists",
// "patch_successfully_applied", "resolved", "tests_status": {FAIL_TO_PASS,
// PASS_TO_PASS, FAIL_TO_FAIL, PASS_TO_FAIL: {"success": [...], "failure": [...]}}}
// and a run summary (total/submitted/completed/resolved/unresolved/
// empty_patch/error instances and their ids). This is the same shape, one
// JSON object: the summary's keys plus "instances" keyed by task id.
//
// Where SWE-bench takes FAIL_TO_PASS and PASS_TO_PASS from its dataset (the
// tests the reference patch fixed), here they come from the unpatched
// baseline and the patched run (test_report.h's triage):
//   FAIL_TO_PASS  success: fixed,   failure: still failing
//   PASS_TO_PASS  success: passing, failure: newly broken
//   FAIL_TO_FAIL, PASS_TO_FAIL: empty (no dataset lists them)
// plus "flaky" and "added" as the triage has them, and "triage_available"
// (false when either side listed no tests: then the lists are empty and
// "resolved" rests on the verdict alone). "resolved" is the task's eval
// category `passed`: the same judgement as the summary, never a second one.
// An instance is "completed" when it has a verdict (passed, failed, refused,
// flaky), an "error" when it ended in infra_error or isolation_violation
// (the latter also listed as "isolation_violation_ids") or has no result file
// (interrupted, never run), "empty_patch" when its patch was refused as
// empty (a SWE-bench prediction with an empty model_patch). Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

// `results`: task id -> its result file (eval_runner.h), absent when the
// task has none. `task_ids` in task-file order.
nlohmann::json swebench_report(const std::vector<std::string>& task_ids,
                               const std::map<std::string, nlohmann::json>& results);

}  // namespace lazyagent
