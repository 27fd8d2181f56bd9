// `report: junit:PATH` end to end on the real podman sandbox: the file the
// test command writes inside the sandbox is the verdict's evidence (not the
// runner's output), it comes out through the log and is taken out of it.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include "harness.h"

using nlohmann::json;
using namespace it;

TEST_CASE("junit report: the file written in the sandbox decides the verdict", "[junit]") {
  TempDir state;
  // unittest prints its own OK; the JUnit file says two tests, one failed.
  const std::string config =
      "report: junit:out/results.xml\n"
      "test_command: >-\n"
      "  python3 -m unittest -q 2>&1; mkdir -p out &&\n"
      "  printf '%s' '<testsuites><testsuite><testcase classname=\"t\" name=\"a\"/>"
      "<testcase classname=\"t\" name=\"b\"><failure message=\"no\"/></testcase></testsuite></testsuites>'\n"
      "  > out/results.xml\n";
  TestRun r = test_patch({state.path()}, fixing_patch(), {"--no-baseline"}, config);
  INFO(r.cli.err << r.result.dump(2));
  CHECK(r.cli.exit_code == 1);
  CHECK(r.result["test_exit_code"] == 0);
  CHECK(r.result["reason"] == "inconsistent: the test command exited 0 but junit reported 1 failed");
  CHECK(r.result["runner"] == json{{"runner", "junit"}, {"unit", "tests"}, {"tests_run", 2},
                                   {"passed", 1}, {"failed", 1}, {"skipped", 0}});
  CHECK(r.result["tests"]["format"] == "junit");
  CHECK(r.result["evidence"] == "junit");  // the file decided, not unittest's "OK"
  CHECK(r.result["tests"]["tests"] == json::array({{{"id", "t.a"}, {"outcome", "passed"}},
                                                  {{"id", "t.b"}, {"outcome", "failed"}}}));
  const std::string out = r.result["test_output"];
  CHECK(out.find("Ran 4 tests") != std::string::npos);
  CHECK(out.find("junit-report") == std::string::npos);  // the block is taken out of the log
  CHECK(out.find("<testsuites>") == std::string::npos);

  // A passing file passes; the recorded test command is the user's.
  const std::string passing =
      "report: junit:r.xml\ntest_command: >-\n  python3 -m unittest -q &&\n"
      "  printf '%s' '<testsuite><testcase name=\"a\"/><testcase name=\"b\"/></testsuite>' > r.xml\n";
  TestRun ok = test_patch({state.path()}, fixing_patch(), {"--no-baseline"}, passing);
  INFO(ok.cli.err << ok.result.dump(2));
  CHECK(ok.cli.exit_code == 0);
  CHECK(ok.result["tests_passed"] == true);
  CHECK(ok.result["runner"]["tests_run"] == 2);

  // No file: no evidence, whatever unittest printed.
  const std::string none = "report: junit:r.xml\ntest_command: python3 -m unittest -v\n";
  TestRun missing = test_patch({state.path()}, fixing_patch(), {"--no-baseline"}, none);
  CHECK(missing.cli.exit_code == 1);
  CHECK(missing.result["reason"] == "no test report: the JUnit report r.xml: the test command wrote no report file");
  CHECK(missing.result["test_output"].get<std::string>().find("Ran 4 tests") != std::string::npos);
  CHECK(missing.result["evidence"] == "junit");

  // Without `report:` the runner writes its own report through the tool's
  // driver (runner_driver.h), and the result says so.
  TestRun driven = test_patch({state.path()}, fixing_patch(), {"--no-baseline"},
                              "test_command: python3 -m unittest -v\n");
  INFO(driven.cli.err << driven.result.dump(2));
  CHECK(driven.cli.exit_code == 0);
  CHECK(driven.result["evidence"] == "driver");
  CHECK(driven.result["runner"]["runner"] == "junit");
  CHECK(driven.result["runner"]["tests_run"] == 4);
  CHECK(driven.result["tests"]["format"] == "junit");
  CHECK(driven.result.count("evidence_note") == 0);
  // With `report: output`, or a command the tool does not rewrite, the
  // printed output decides, and the result says so (and why, for the latter).
  TestRun text = test_patch({state.path()}, fixing_patch(), {"--no-baseline"},
                            "report: output\ntest_command: python3 -m unittest -v\n");
  INFO(text.cli.err << text.result.dump(2));
  CHECK(text.cli.exit_code == 0);
  CHECK(text.result["evidence"] == "output");
  CHECK(text.result["runner"]["runner"] == "unittest");
  CHECK(text.result.count("evidence_note") == 0);
  TestRun shell = test_patch({state.path()}, fixing_patch(), {"--no-baseline"},
                             "test_command: python3 -m unittest -v 2>&1\n");
  INFO(shell.cli.err << shell.result.dump(2));
  CHECK(shell.cli.exit_code == 0);
  CHECK(shell.result["evidence"] == "output");
  CHECK(shell.result["evidence_note"].get<std::string>().find("not a simple") != std::string::npos);
}
