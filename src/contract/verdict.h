// Honest verdicts: when may we say the tests passed?
//
// An exit status of 0 is not enough. A patch can make the test process exit 0
// before any test runs (os._exit(0) at import time), a test command can
// discover no tests ("Ran 0 tests ... OK"), and a copy that never reached the
// working directory looks exactly like that (ARCHITECTURE section 5). So
// `tests_passed` requires exit status 0 AND a test runner's closing report,
// found at the end of the output, saying that at least one test ran and none
// failed. The runners recognised, and how: runner_report.h.
//
// This judges honest runners. Code that runs inside the test process can print
// a forged report; what a passing test proves is bounded by the test itself.
#pragma once

#include <string>
#include <string_view>

#include "contract/runner_report.h"

namespace lazyagent {

struct Verdict {
  bool passed = false;
  std::string reason;  // empty when passed
  RunnerReport report;
};

struct RunOutcome {
  int exit_code = -1;
  bool timed_out = false;
  long timeout_seconds = 0;
  bool output_truncated = false;
  // The test runner was not there to run the tests: the line that says so
  // (runner_driver.h missing_runner_line); "" when it was.
  std::string runner_missing;
};

Verdict judge(const RunOutcome& outcome, std::string_view output);

// The same rules over a report from elsewhere (a JUnit file, junit_report.h);
// `missing` says why there is none when !report.found ("" = not found).
Verdict judge_report(const RunOutcome& outcome, const RunnerReport& report, const std::string& missing = "");

}  // namespace lazyagent
