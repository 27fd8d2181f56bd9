#include "verdict.h"


namespace lazyagent {

nlohmann::json runner_report_to_json(const RunnerReport& r) {
  if (!r.found) return nullptr;
  return {{"runner", r.runner}, {"unit", r.unit},     {"tests_run", r.tests_run},
          {"passed", r.passed}, {"failed", r.failed}, {"skipped", r.skipped}};
}

RunnerReport runner_report_from_json(const nlohmann::json& j) {
  RunnerReport r;
  if (!j.is_object()) return r;
  const auto count = [&](const char* k) {
    const auto it = j.find(k);
    return it != j.end() && it->is_number_integer() ? it->get<long>() : -1;
  };
  const auto text = [&](const char* k) {
    const auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  r.runner = text("runner");
  r.unit = text("unit");
  r.tests_run = count("tests_run");
  r.passed = count("passed");
  r.failed = count("failed");
  r.skipped = count("skipped");
  if (r.runner.empty() || r.unit.empty() || r.tests_run < 0 || r.passed < 0 || r.failed < 0 || r.skipped < 0) {
    return {};
  }
  r.success = r.failed == 0 && r.passed > 0;
  r.found = true;
  return r;
}

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
