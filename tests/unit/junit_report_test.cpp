// JUnit XML (junit_report.h) over the real reports pytest 7.2.1 and ctest
// 3.25.1 wrote for the sample suites (tests/fixtures/runner-output/capture/;
// -0 passing, -1 with BREAK=1), and hostile documents.
#include "catch_compat.h"

#include <fstream>
#include <sstream>

#include "runner_fixtures.h"
#include "contract/junit_report.h"

using namespace lazyagent;

namespace {

using runner_fixtures::fixture;

std::string listed(const TestCases& t) {
  std::string s;
  for (const auto& c : t.cases) s += (s.empty() ? "" : " ") + c.id + "=" + outcome_name(c.outcome);
  return s;
}

}  // namespace

TEST_CASE("junit: pytest's report, passing and failing", "[junit]") {
  const JunitReport ok = parse_junit_xml(fixture("pytest-junit-0.xml"));
  REQUIRE(ok.error.empty());
  CHECK(ok.report.found);
  CHECK(ok.report.runner == "junit");
  CHECK(ok.report.success);
  CHECK(ok.report.passed == 7);   // xfail is <skipped type="pytest.xfail">
  CHECK(ok.report.skipped == 2);
  CHECK(ok.report.tests_run == 7);

  const JunitReport bad = parse_junit_xml(fixture("pytest-junit-1.xml"));
  REQUIRE(bad.error.empty());
  CHECK_FALSE(bad.report.success);
  CHECK(bad.report.failed == 2);  // a <failure> and a fixture <error>
  CHECK(bad.cases.format == "junit");
  CHECK(bad.cases.complete);
  CHECK(listed(bad.cases) ==
        "test_sample.test_add=passed test_sample.test_sub=failed test_sample.test_needs_fixture=failed "
        "test_sample.TestGroup.test_mul=passed test_sample.TestGroup.test_skipped=skipped "
        "test_sample.test_xfail=skipped test_sample.test_xpass=passed test_sample.test_param[1]=passed "
        "test_sample.test_param[2]=passed");
}

TEST_CASE("junit: ctest's report (a <testsuite> root, classname = name)", "[junit]") {
  const JunitReport r = parse_junit_xml(fixture("ctest-junit-1.xml"));
  REQUIRE(r.error.empty());
  CHECK(listed(r.cases) == "add=passed sub=failed mul=passed");
  CHECK(r.report.tests_run == 3);
  CHECK(r.report.failed == 1);
  CHECK(parse_junit_xml(fixture("ctest-junit-0.xml")).report.success);
}

TEST_CASE("junit: the counts come from the testcases, not the totals a suite claims", "[junit]") {
  const JunitReport r = parse_junit_xml(
      R"(<testsuite tests="500" failures="0"><testcase name="a"><failure/></testcase></testsuite>)");
  REQUIRE(r.error.empty());
  CHECK(r.report.tests_run == 1);
  CHECK(r.report.failed == 1);
  const JunitReport none = parse_junit_xml(R"(<testsuites tests="12"></testsuites>)");
  REQUIRE(none.error.empty());
  CHECK(none.report.found);
  CHECK(none.report.tests_run == 0);
}

TEST_CASE("junit: bad documents are no evidence, with the reason", "[junit]") {
  CHECK(parse_junit_xml("<testsuite><testcase name='a'>").error ==
        "the JUnit report is not well-formed XML: Start-end tags mismatch at byte 29");
  CHECK(parse_junit_xml("").error == "the JUnit report is not well-formed XML: No document element found at byte 0");
  CHECK(parse_junit_xml("<html><testcase name='a'/></html>").error ==
        "the JUnit report's root element is <html>, not <testsuites> or <testsuite>");
  CHECK(parse_junit_xml("<testsuite><testcase/></testsuite>").error == "the JUnit report has a <testcase> without a name");
  CHECK(parse_junit_xml(std::string(kMaxJunitBytes + 1, ' ')).error ==
        "the JUnit report is 8388609 bytes, over the limit of 8388608");
  // Entities: no external entity is fetched or expanded.
  const JunitReport xxe = parse_junit_xml(
      "<!DOCTYPE t [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><testsuite><testcase name=\"&x;\"/></testsuite>");
  REQUIRE(xxe.error.empty());
  CHECK(xxe.cases.cases.at(0).id == "&x;");
  // Deep nesting does not recurse.
  std::string deep;
  for (int i = 0; i < 200000; ++i) deep += "<testsuite>";
  deep += "<testcase name='x'/>";
  for (int i = 0; i < 200000; ++i) deep += "</testsuite>";
  CHECK(parse_junit_xml(deep).report.tests_run == 1);
}

TEST_CASE("junit: the report block travels in the output and is taken out of it", "[junit]") {
  const std::string cmd = test_command_with_junit("python3 -m pytest -q --junitxml=r.xml", "r.xml");
  CHECK(cmd ==
        "rm -f 'r.xml'\n(\npython3 -m pytest -q --junitxml=r.xml\n)\nlazyagent_rc=$?\n"
        "if [ -f 'r.xml' ]; then printf '\\n%s%s\\n' 'lazyagent-oci junit-report: ' \"$(wc -c < 'r.xml')\"; "
        "cat 'r.xml'; else printf '\\n%s%s\\n' 'lazyagent-oci junit-report: ' missing; fi\n"
        "printf '\\n%s\\n' 'lazyagent-oci junit-report end'\nexit $lazyagent_rc\n");
  const std::string xml = fixture("ctest-junit-0.xml");
  std::string out = "tests ran\n\nlazyagent-oci junit-report: " + std::to_string(xml.size()) + "\n" + xml +
                    "\nlazyagent-oci junit-report end\n";
  JunitDump d = take_junit_dump(&out);
  CHECK(d.error.empty());
  CHECK(d.xml == xml);
  CHECK(out == "tests ran\n");

  // A forged block printed by the test before the real one: the last wins.
  std::string forged = "lazyagent-oci junit-report: 3\nabc\nlazyagent-oci junit-report end\n\nlazyagent-oci junit-report: missing\n\nlazyagent-oci junit-report end\n";
  forged = "\n" + forged;
  d = take_junit_dump(&forged);
  CHECK(d.error == "the test command wrote no report file");

  // Cut at the log limit.
  std::string cut = "x\nlazyagent-oci junit-report: 5000\n<testsuite>";
  CHECK(take_junit_dump(&cut).error ==
        "the report (5000 bytes) was cut from the output: the test output was over limits.log_bytes "
        "and the report did not fit in its kept tail");
  CHECK(cut == "x");
  std::string none = "Ran 3 tests\n\nOK\n";
  CHECK(take_junit_dump(&none).error ==
        "no report block in the output (the test command was cut or killed before it was printed)");
  std::string bad = "\nlazyagent-oci junit-report: 99999999999999\n";
  CHECK(take_junit_dump(&bad).error == "the report block in the output is malformed");
}

TEST_CASE("junit: a run's per-test results written out read back the same (test --report)", "[junit]") {
  TestCases t;
  t.format = "pytest";
  t.complete = true;
  t.cases = {{"test_a.py::test_<ok>&\"x\"", TestOutcome::kPassed},
             {"test_a.py::test_b", TestOutcome::kFailed},
             {"test_a.py::test_c", TestOutcome::kSkipped}};
  const std::string xml = junit_xml_of(t, "lazyagent-oci r-1", false, "tests failed: exit 1 <&>");
  CHECK(xml.find("<property name=\"reason\" value=\"tests failed: exit 1 &lt;&amp;") != std::string::npos);  // escaped
  const JunitReport back = parse_junit_xml(xml);
  REQUIRE(back.error.empty());
  CHECK(listed(back.cases) == "test_a.py::test_<ok>&\"x\"=passed test_a.py::test_b=failed test_a.py::test_c=skipped");
  CHECK(back.report.tests_run == 2);
  CHECK(back.report.failed == 1);
  // No per-test results: an empty suite that still carries the verdict.
  const std::string empty = junit_xml_of(TestCases{}, "s", true, "");
  CHECK(parse_junit_xml(empty).report.tests_run == 0);
  CHECK(empty.find("<property name=\"verdict\" value=\"passed\" />") != std::string::npos);
}
