// Per-test parsing on real runner outputs (tests/fixtures/runner-output/,
// captured from python3 -m unittest -v in the sandbox image and from Debian's
// pytest 7.2), and the triage rules.
#include "catch_compat.h"

#include <fstream>
#include <sstream>

#include "runner_fixtures.h"
#include "contract/test_report.h"

using namespace lazyagent;

namespace {

using runner_fixtures::fixture;

std::string outcomes(const TestCases& t) {
  std::string s;
  for (const auto& c : t.cases) s += c.id + "=" + outcome_name(c.outcome) + "\n";
  return s;
}

TestCases cases(std::vector<std::pair<std::string, TestOutcome>> list, bool complete = true) {
  TestCases t;
  t.format = complete ? "unittest" : "pytest-summary";
  t.complete = complete;
  for (auto& [id, o] : list) t.cases.push_back({id, o});
  return t;
}

constexpr auto P = TestOutcome::kPassed;
constexpr auto F = TestOutcome::kFailed;
constexpr auto S = TestOutcome::kSkipped;

}  // namespace

TEST_CASE("test_report: unittest -v from the sandbox", "[test_report]") {
  const TestCases t = parse_test_cases(fixture("unittest-triage.txt"));
  CHECK(t.format == "unittest");
  CHECK(t.complete);
  CHECK(outcomes(t) ==
        "test_pricing.PricingTest.test_label=passed\n"
        "test_pricing.PricingTest.test_rounded_half_up=failed\n"
        "test_pricing.PricingTest.test_rounded_plain=passed\n"
        "test_pricing.PricingTest.test_total_empty=passed\n"
        "test_pricing.PricingTest.test_total_sums_all=failed\n");
  CHECK(parse_test_cases(fixture("unittest-seed.txt")).cases.size() == 4);
}

TEST_CASE("test_report: unittest -v with docstrings, prints, errors, skips, expected failures", "[test_report]") {
  const TestCases t = parse_test_cases(fixture("unittest-mixed.txt"));
  CHECK(outcomes(t) ==
        "test_mixed.Mixed.test_doc=passed\n"       // status on the docstring line
        "test_mixed.Mixed.test_error=failed\n"
        "test_mixed.Mixed.test_ok=passed\n"
        "test_mixed.Mixed.test_prints=failed\n"    // status on the line after the test's print
        "test_mixed.Mixed.test_skipped=skipped\n"
        "test_mixed.Mixed.test_xfail=passed\n");
}

TEST_CASE("test_report: Python < 3.11 headers name the class only", "[test_report]") {
  const TestCases t = parse_test_cases("test_add (test_calc.CalcTest) ... ok\ntest_sub (test_calc.CalcTest) ... FAIL\n");
  CHECK(outcomes(t) == "test_calc.CalcTest.test_add=passed\ntest_calc.CalcTest.test_sub=failed\n");
}

TEST_CASE("test_report: pytest -v", "[test_report]") {
  const TestCases t = parse_test_cases(fixture("pytest-v-mixed.txt"));
  CHECK(t.format == "pytest");
  CHECK(t.complete);
  CHECK(outcomes(t) ==
        "test_mixed.py::Mixed::test_doc=passed\n"
        "test_mixed.py::Mixed::test_error=failed\n"
        "test_mixed.py::Mixed::test_ok=passed\n"
        "test_mixed.py::Mixed::test_prints=failed\n"
        "test_mixed.py::Mixed::test_skipped=skipped\n"
        "test_mixed.py::Mixed::test_xfail=passed\n"
        "test_mixed.py::test_plain_function=passed\n"
        "test_mixed.py::test_plain_fails=failed\n");
  CHECK(parse_test_cases(fixture("pytest-v-triage.txt")).cases.size() == 5);
}

TEST_CASE("test_report: plain pytest names only its failures", "[test_report]") {
  const TestCases t = parse_test_cases(fixture("pytest-mixed.txt"));
  CHECK(t.format == "pytest-summary");
  CHECK_FALSE(t.complete);
  CHECK(outcomes(t) ==
        "test_mixed.py::Mixed::test_error=failed\n"
        "test_mixed.py::Mixed::test_prints=failed\n"
        "test_mixed.py::test_plain_fails=failed\n");
}

TEST_CASE("test_report: no runner, hostile lines", "[test_report]") {
  CHECK(parse_test_cases("3 passed, 1 failed\n").format.empty());
  CHECK(parse_test_cases("").cases.empty());
  CHECK(parse_test_cases(std::string(100000, 'x') + " (a.b) ... ok\n").cases.empty());
  CHECK(parse_test_cases("not a test (x y) ... ok\n").cases.empty());
  // The last line for an id wins.
  CHECK(outcomes(parse_test_cases("t (m.C.t) ... FAIL\nt (m.C.t) ... ok\n")) == "m.C.t=passed\n");
}

TEST_CASE("triage: fixed, still failing, newly broken, passing, added", "[test_report]") {
  const TestCases before = cases({{"a", F}, {"b", F}, {"c", P}, {"d", P}, {"gone", P}, {"s", P}});
  const TestCases after = cases({{"a", P}, {"b", F}, {"c", F}, {"d", P}, {"new", P}, {"s", S}});
  const Triage t = triage(before, {after});
  CHECK(t.available);
  CHECK(t.fixed == std::vector<std::string>{"a"});
  CHECK(t.still_failing == std::vector<std::string>{"b"});
  CHECK(t.newly_broken == std::vector<std::string>{"c", "s", "gone"});  // failing, skipped, gone
  CHECK(t.passing == std::vector<std::string>{"d"});
  CHECK(t.added == std::vector<std::string>{"new"});
  CHECK(t.flaky.empty());
}

TEST_CASE("triage: a failing test that is skipped now is not fixed", "[test_report]") {
  const Triage t = triage(cases({{"a", F}}), {cases({{"a", S}})});
  CHECK(t.fixed.empty());
  CHECK(t.still_failing == std::vector<std::string>{"a"});
}

TEST_CASE("triage: a test whose outcome differs between runs is flaky, not blamed", "[test_report]") {
  const TestCases before = cases({{"fix", F}, {"coin", P}});
  const Triage t = triage(before, {cases({{"fix", P}, {"coin", F}}), cases({{"fix", P}, {"coin", P}})});
  CHECK(t.flaky == std::vector<std::string>{"coin"});
  CHECK(t.newly_broken.empty());
  CHECK(t.fixed == std::vector<std::string>{"fix"});
}

TEST_CASE("triage: partial reports (plain pytest) and no reports", "[test_report]") {
  const Triage t = triage(cases({{"a", F}, {"b", F}}, false), {cases({{"b", F}, {"c", F}}, false)});
  CHECK(t.fixed == std::vector<std::string>{"a"});
  CHECK(t.still_failing == std::vector<std::string>{"b"});
  CHECK(t.newly_broken == std::vector<std::string>{"c"});
  CHECK_FALSE(triage(TestCases{}, {cases({{"a", P}})}).available);
  CHECK_FALSE(triage(cases({{"a", P}}), {}).available);
}
