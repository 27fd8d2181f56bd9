#include "contract/verdict.h"


namespace lazyagent {

Verdict judge(const RunOutcome& o, std::string_view output) { return judge_report(o, find_runner_report(output)); }

Verdict judge_report(const RunOutcome& o, const RunnerReport& report, const std::string& missing) {
  Verdict v;
  v.report = report;
  const auto& r = v.report;
  if (o.timed_out) {
    v.reason = "timeout: the tests did not finish within " + std::to_string(o.timeout_seconds) +
               " s and were killed";
  } else if (o.exit_code == 137) {
    v.reason = "killed: the test process got SIGKILL (exit 137), usually the memory limit";
  } else if (o.exit_code != 0 && !o.runner_missing.empty()) {
    v.reason = "no test runner: the tests did not run (" + o.runner_missing +
               "): install it where the tests run, in the config's environment (docs/environments.md)";
  } else if (o.exit_code != 0) {
    v.reason = "tests failed: the test command exited " + std::to_string(o.exit_code);
    if (r.found && r.failed > 0) {
      v.reason += " (" + r.runner + ": " + std::to_string(r.failed) + " of " +
                  std::to_string(r.tests_run) + " failed)";
    }
  } else if (!r.found) {
    v.reason = missing.empty() ? "no test report: the test command exited 0 but no test runner reported results"
                               : "no test report: " + missing;
    if (o.output_truncated) v.reason += " (the output was cut at the log limit)";
  } else if (r.tests_run == 0) {
    v.reason = "no tests ran: " + r.runner + " found no tests";
  } else if (!r.success) {
    v.reason = "inconsistent: the test command exited 0 but " + r.runner + " reported " +
               std::to_string(r.failed) + " failed";
  } else {
    v.passed = true;
  }
  return v;
}

}  // namespace lazyagent
