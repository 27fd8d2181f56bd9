#include "catch_compat.h"

#include "contract/verdict.h"

using namespace lazyagent;

namespace {
const char* kUnittestOk =
    "test_add (test_calculator.CalculatorTest.test_add) ... ok\n"
    "\n----------------------------------------------------------------------\n"
    "Ran 4 tests in 0.001s\n\nOK\n";
const char* kUnittestFail =
    "FAIL: test_add (test_calculator.CalculatorTest.test_add)\n"
    "----------------------------------------------------------------------\n"
    "Ran 4 tests in 0.002s\n\nFAILED (failures=1, errors=2)\n";
RunOutcome exited(int code) {
  RunOutcome o;
  o.exit_code = code;
  o.timeout_seconds = 120;
  return o;
}
}  // namespace

TEST_CASE("unittest success with tests run is a pass") {
  const Verdict v = judge(exited(0), kUnittestOk);
  CHECK(v.passed);
  CHECK(v.reason.empty());
  CHECK(v.report.runner == "unittest");
  CHECK(v.report.tests_run == 4);
}

TEST_CASE("unittest failures are counted") {
  const Verdict v = judge(exited(1), kUnittestFail);
  CHECK_FALSE(v.passed);
  CHECK(v.report.failed == 3);
  CHECK(v.reason == "tests failed: the test command exited 1 (unittest: 3 of 4 failed)");
}

TEST_CASE("exit 0 with no tests run is a failure") {
  const Verdict v = judge(exited(0), "\n---\nRan 0 tests in 0.000s\n\nOK\n");
  CHECK_FALSE(v.passed);
  CHECK(v.reason == "no tests ran: unittest found no tests");
  CHECK_FALSE(judge(exited(0), "Ran 0 tests in 0.000s\n\nNO TESTS RAN\n").passed);
}

TEST_CASE("exit 0 before the runner reported is a failure") {
  const Verdict v = judge(exited(0), "test_add ... ");
  CHECK_FALSE(v.passed);
  CHECK(v.reason == "no test report: the test command exited 0 but no test runner reported results");
  RunOutcome o = exited(0);
  o.output_truncated = true;
  CHECK(judge(o, "x").reason ==
        "no test report: the test command exited 0 but no test runner reported results "
        "(the output was cut at the log limit)");
}

TEST_CASE("exit 0 with a failing report is inconsistent, not a pass") {
  const Verdict v = judge(exited(0), kUnittestFail);
  CHECK_FALSE(v.passed);
  CHECK(v.reason == "inconsistent: the test command exited 0 but unittest reported 3 failed");
}

TEST_CASE("timeouts and kills name themselves") {
  RunOutcome o = exited(137);
  o.timed_out = true;
  CHECK(judge(o, "").reason == "timeout: the tests did not finish within 120 s and were killed");
  CHECK(judge(exited(137), kUnittestOk).reason ==
        "killed: the test process got SIGKILL (exit 137), usually the memory limit");
}

TEST_CASE("the last report wins") {
  const std::string out = std::string(kUnittestOk) + kUnittestFail;
  CHECK(find_runner_report(out).failed == 3);
}

TEST_CASE("pytest and plain summaries are recognised") {
  CHECK(judge(exited(0), "===== 3 passed, 1 skipped in 0.12s =====\n").passed);
  const auto r = find_runner_report("=== 1 failed, 2 passed in 0.50s ===");
  CHECK(r.runner == "pytest");
  CHECK(r.failed == 1);
  CHECK(r.tests_run == 3);
  CHECK_FALSE(judge(exited(5), "===== no tests ran in 0.01s =====").passed);
  CHECK_FALSE(judge(exited(0), "===== no tests ran in 0.01s =====").passed);
  CHECK(judge(exited(0), "5 passed, 0 failed\n").passed);
  CHECK(judge(exited(0), "tests: 5 passed, 0 failed, 1 skipped\n").passed);
  CHECK_FALSE(judge(exited(0), "5 passed, 1 failed\n").passed);
}

TEST_CASE("a megabyte-long line does not crash the report search") {
  const std::string out = std::string(1 << 20, '=') + "\n" + kUnittestOk;
  CHECK(judge(exited(0), out).passed);
  CHECK_FALSE(find_runner_report(std::string(1 << 20, 'A')).found);
}

// Hostile counts (fuzz/verdict_fuzzer.cpp): std::stol threw std::out_of_range
// on a count past LONG_MAX, which ended the orchestrator mid-run; a sum of two
// counts overflowed. Counts now saturate at 1,000,000,000.
TEST_CASE("runner report counts past LONG_MAX saturate, never throw or overflow", "[verdict][fuzz]") {
  const Verdict ran = judge(exited(0), "Ran 99999999999999999999 tests in 0.1s\n\nOK\n");
  CHECK(ran.passed);
  CHECK(ran.report.tests_run == 1000000000);

  const Verdict failed = judge(exited(1), "Ran 3 tests in 0.1s\n\nFAILED (failures=99999999999999999999, errors=99999999999999999999)\n");
  CHECK(failed.report.failed == 2000000000);
  CHECK(failed.reason == "tests failed: the test command exited 1 (unittest: 2000000000 of 3 failed)");

  const RunnerReport pytest = find_runner_report("===== 99999999999999999999 passed in 0.10s =====\n");
  CHECK(pytest.found);
  CHECK(pytest.tests_run == 1000000000);

  const RunnerReport plain = find_runner_report("9223372036854775807 passed, 1 failed\n");
  CHECK(plain.found);
  CHECK(plain.tests_run == 1000000001);
  CHECK(plain.failed == 1);
  CHECK_FALSE(plain.success);
}

TEST_CASE("a missing test runner is named as such, not as failed tests (issue 43)") {
  RunOutcome o;
  o.exit_code = 1;
  o.runner_missing = "/usr/bin/python3: No module named pytest";
  const Verdict v = judge_report(o, RunnerReport{}, "the runner's report was not written");
  CHECK_FALSE(v.passed);
  CHECK(v.reason ==
        "no test runner: the tests did not run (/usr/bin/python3: No module named pytest): install it where the "
        "tests run, in the config's environment (docs/environments.md)");
  o.runner_missing.clear();
  CHECK(judge_report(o, RunnerReport{}).reason == "tests failed: the test command exited 1");
}
