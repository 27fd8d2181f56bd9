// Fuzz target: judging a test run by its output (src/verdict.*).
//
// Input: byte 0 picks the outcome (exit code 0, 1, 137 or 2; timed out;
// output truncated); the rest is the sandbox's output, written by code we do
// not trust. Checked beyond crashes:
//   - "passed" only with exit 0, no timeout, a runner report found that ran at
//     least one test and failed none (the honest-verdict rule);
//   - every refusal has a reason, a pass has none;
//   - a report's success never comes with failures;
//   - counts are never negative and a failure count never exceeds the run
//     count for runners that report both.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "contract/verdict.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view output(reinterpret_cast<const char*>(data) + 1, size - 1);
  lazyagent::RunOutcome outcome;
  static const int kExitCodes[] = {0, 1, 137, 2};
  outcome.exit_code = kExitCodes[data[0] & 3];
  outcome.timed_out = (data[0] & 4) != 0;
  outcome.timeout_seconds = 120;
  outcome.output_truncated = (data[0] & 8) != 0;

  const lazyagent::RunnerReport r = lazyagent::find_runner_report(output);
  FUZZ_CHECK(r.tests_run >= 0 && r.failed >= 0, "counts are never negative");
  if (r.found && r.runner != "unittest") FUZZ_CHECK(r.failed <= r.tests_run, "failed <= run");
  // unittest prints "Ran 0 tests ... OK": a report may say success with no
  // test run (judge refuses that); it never says success with failures.
  if (r.success) FUZZ_CHECK(r.found && r.failed == 0, "success means none failed");
  if (!r.found) FUZZ_CHECK(!r.success && r.runner.empty(), "no report, no success");

  const lazyagent::Verdict v = lazyagent::judge(outcome, output);
  if (v.passed) {
    FUZZ_CHECK(outcome.exit_code == 0 && !outcome.timed_out, "a pass needs exit 0 in time");
    FUZZ_CHECK(v.report.found && v.report.tests_run > 0 && v.report.failed == 0 && v.report.success,
               "a pass needs a report of at least one test run and none failed");
    FUZZ_CHECK(v.reason.empty(), "a pass has no reason");
  } else {
    FUZZ_CHECK(!v.reason.empty(), "a refusal says why");
  }
  return 0;
}
