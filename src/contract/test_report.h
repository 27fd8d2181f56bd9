// Per-test results from a runner's output, and the triage of a patch against
// the unpatched seed ("baseline"). Pure: strings in, values out.
//
// Recognised (from real outputs, tests/fixtures/runner-output/):
//   unittest -v   "test_x (mod.Class.test_x) ... ok|FAIL|ERROR|skipped '...'|
//                 expected failure|unexpected success", also split over lines
//                 (a docstring line, or output printed by the test before the
//                 status word)
//   pytest -v     "path::Class::test_x PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS [ 12%]"
//   pytest        only the "short test summary info" lines "FAILED path::test - ..."
//                 (passing tests are not named: the report is partial);
//                 with -rA also "PASSED path::test" (complete)
//   go, cargo, ctest, node --test: runner_cases.h
// Anything else yields no per-test results; the triage then says so.
//
// The output comes from the sandbox and is untrusted: a test can print lines
// that look like another test's result. Triage explains a verdict, it never
// turns a failing verdict (verdict.h) into a pass; it can only turn a pass
// into a failure (a test that passed before and is skipped or gone after).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

enum class TestOutcome { kPassed, kFailed, kSkipped };

struct TestCaseResult {
  std::string id;  // "test_pricing.PricingTest.test_total" or "test_x.py::test_y"
  TestOutcome outcome = TestOutcome::kPassed;
};

struct TestCases {
  std::string format;  // "unittest", "pytest", "pytest-summary" or "" (none found)
  bool complete = false;  // every test that ran is named (false for "pytest-summary")
  std::vector<TestCaseResult> cases;  // in output order, one per id (the last line wins)
};

TestCases parse_test_cases(std::string_view output);

const char* outcome_name(TestOutcome o);  // "passed", "failed", "skipped"

// How each test moved from the baseline (unpatched seed) to the patched run.
struct Triage {
  bool available = false;                 // both sides had per-test results
  std::vector<std::string> fixed;         // failed before, pass now
  std::vector<std::string> still_failing; // failed before and now
  std::vector<std::string> newly_broken;  // passed before; fail, skipped or gone now
  std::vector<std::string> passing;       // passed before and now
  std::vector<std::string> added;         // not in the baseline
  std::vector<std::string> flaky;         // outcome differed between runs of the same patch
};

// `runs` are the patched runs of one patch (first run, then re-runs). A test
// whose outcome differs between them is flaky and is not counted as fixed,
// still failing or newly broken; otherwise its outcome in the first run counts.
Triage triage(const TestCases& baseline, const std::vector<TestCases>& runs);

nlohmann::json cases_to_json(const TestCases& c);
TestCases cases_from_json(const nlohmann::json& j);  // lenient: bad input gives no cases
nlohmann::json triage_to_json(const Triage& t);

}  // namespace lazyagent
