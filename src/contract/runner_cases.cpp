#include "contract/runner_cases.h"

#include <map>
#include <optional>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

namespace lazyagent {
namespace {

constexpr std::size_t kMaxCaseLine = 2000;  // longer lines are not runner lines (std::regex recursion)

// One case per id, in first-seen order; a later line for the same id wins.
class Cases {
 public:
  void add(const std::string& id, TestOutcome o) {
    if (id.empty()) return;
    auto [it, inserted] = index_.emplace(id, list_.size());
    if (inserted) list_.push_back({id, o});
    else list_[it->second].outcome = o;
  }
  TestCases done(const char* format) {
    TestCases t;
    if (list_.empty()) return t;
    t.format = format;
    t.complete = true;
    t.cases = std::move(list_);
    return t;
  }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<TestCaseResult> list_;
};

bool usable_case_line(std::string_view line) { return !line.empty() && line.size() <= kMaxCaseLine; }

std::size_t indent_width(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// go test -v: results are printed before the package line that names them.
TestCases go_verbose_cases(const std::vector<std::string_view>& lines) {
  static const std::regex result(R"(^\s*--- (PASS|FAIL|SKIP): (\S+) \([0-9.]+s\)$)");
  static const std::regex pkg(R"(^(ok|FAIL)\s+(\S+)\s+.*$)");
  Cases cases;
  std::vector<std::pair<std::string, TestOutcome>> pending;
  bool verbose = false;
  for (std::string_view v : lines) {
    if (!usable_case_line(v)) continue;
    const std::string line(v);
    std::smatch m;
    if (line.rfind("=== RUN   ", 0) == 0) verbose = true;
    if (std::regex_match(line, m, result)) {
      const TestOutcome o = m[1] == "PASS" ? TestOutcome::kPassed
                            : m[1] == "FAIL" ? TestOutcome::kFailed
                                             : TestOutcome::kSkipped;
      pending.emplace_back(m[2], o);
    } else if (std::regex_match(line, m, pkg)) {
      for (const auto& [name, o] : pending) cases.add(m[2].str() + "." + name, o);
      pending.clear();
    }
  }
  for (const auto& [name, o] : pending) cases.add(name, o);  // no package line (cut output)
  return verbose ? cases.done("go") : TestCases{};
}

TestCases go_json_cases(const std::vector<std::string_view>& lines) {
  Cases cases;
  for (std::string_view line : lines) {
    if (!usable_case_line(line) || line[0] != '{') continue;
    const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    const auto a = e.find("Action"), p = e.find("Package"), t = e.find("Test");
    if (a == e.end() || p == e.end() || t == e.end() || !a->is_string() || !p->is_string() || !t->is_string()) continue;
    const std::string act = *a;
    const std::string id = p->get<std::string>() + "." + t->get<std::string>();
    if (act == "pass") cases.add(id, TestOutcome::kPassed);
    else if (act == "fail") cases.add(id, TestOutcome::kFailed);
    else if (act == "skip") cases.add(id, TestOutcome::kSkipped);
  }
  return cases.done("go-json");
}

TestCases cargo_cases(const std::vector<std::string_view>& lines) {
  static const std::regex result(R"(^test (\S.*) \.\.\. (ok|FAILED|ignored)(, .*)?$)");
  Cases cases;
  for (std::string_view v : lines) {
    if (!usable_case_line(v) || v.rfind("test ", 0) != 0) continue;
    const std::string line(v);
    std::smatch m;
    if (!std::regex_match(line, m, result)) continue;
    cases.add(m[1], m[2] == "ok" ? TestOutcome::kPassed
                    : m[2] == "FAILED" ? TestOutcome::kFailed
                                       : TestOutcome::kSkipped);
  }
  return cases.done("cargo");
}

TestCases ctest_cases(const std::vector<std::string_view>& lines) {
  static const std::regex result(R"(^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(\*\*\*)?(.+?)\s+[0-9.]+ sec$)");
  Cases cases;
  for (std::string_view v : lines) {
    if (!usable_case_line(v)) continue;
    const std::string line(v);
    std::smatch m;
    if (!std::regex_match(line, m, result)) continue;
    const std::string status = m[3];
    cases.add(m[1], status == "Passed" ? TestOutcome::kPassed
                    : status == "Skipped" || status.rfind("Not Run", 0) == 0 ? TestOutcome::kSkipped
                                                                            : TestOutcome::kFailed);
  }
  return cases.done("ctest");
}

// TAP from node --test: "# Subtest: name" opens a test at its indentation,
// "ok N - name" / "not ok N - name [# SKIP|# TODO ...]" closes it. Only leaves
// (tests with no results nested inside) are cases; suites are not.
TestCases node_tap_cases(const std::vector<std::string_view>& lines) {
  static const std::regex result(R"(^(not ok|ok) \d+ - (.*?)( # (SKIP|TODO)\b.*)?$)");
  struct Open {
    std::size_t indent;
    std::string name;
    bool parent = false;
  };
  std::vector<Open> open;
  Cases cases;
  for (std::string_view v : lines) {
    if (!usable_case_line(v)) continue;
    const std::size_t d = indent_width(v);
    const std::string line(v.substr(d));
    if (line.rfind("# Subtest: ", 0) == 0) {
      while (!open.empty() && open.back().indent >= d) open.pop_back();
      if (!open.empty()) open.back().parent = true;
      open.push_back({d, line.substr(11)});
      continue;
    }
    std::smatch m;
    if (!std::regex_match(line, m, result)) continue;
    while (!open.empty() && open.back().indent > d) open.pop_back();
    if (open.empty() || open.back().indent != d || open.back().name != m[2].str()) continue;
    if (!open.back().parent) {
      std::string id;
      for (const auto& o : open) id += (id.empty() ? "" : " > ") + o.name;
      cases.add(id, m[4].matched ? TestOutcome::kSkipped
                    : m[1] == "ok" ? TestOutcome::kPassed
                                   : TestOutcome::kFailed);
    }
    open.pop_back();
  }
  return cases.done("node-tap");
}

// spec from node --test: "▶ group" opens a suite (its closing line has a
// duration), "✔ name (1.2ms)" passed, "✖ name (1.2ms)" failed, "﹣ name (..) #
// reason" skipped, two spaces per level. The "✖ failing tests:" recap at the
// end repeats failures without their suites: parsing stops there.
TestCases node_spec_cases(const std::vector<std::string_view>& lines) {
  static const std::string pass = "\xE2\x9C\x94 ", fail = "\xE2\x9C\x96 ", skip = "\xEF\xB9\xA3 ",
                           suite = "\xE2\x96\xB6 ";
  static const std::regex timed(R"(^(.*?) \([0-9.]+m?s\)( # .*)?$)");
  std::vector<std::pair<std::size_t, std::string>> suites;
  Cases cases;
  for (std::string_view v : lines) {
    if (!usable_case_line(v)) continue;
    const std::size_t d = indent_width(v);
    const std::string line(v.substr(d));
    if (d == 0 && line == fail + "failing tests:") break;
    while (!suites.empty() && suites.back().first > d) suites.pop_back();
    std::smatch m;
    if (line.rfind(suite, 0) == 0) {
      const std::string rest = line.substr(suite.size());
      if (std::regex_match(rest, m, timed)) {
        if (!suites.empty() && suites.back().first == d) suites.pop_back();
      } else {
        suites.emplace_back(d, rest);
      }
      continue;
    }
    for (const auto& [mark, o] : {std::pair{pass, TestOutcome::kPassed}, std::pair{fail, TestOutcome::kFailed},
                                  std::pair{skip, TestOutcome::kSkipped}}) {
      if (line.rfind(mark, 0) != 0) continue;
      const std::string rest = line.substr(mark.size());
      if (!std::regex_match(rest, m, timed)) break;
      std::string id;
      for (const auto& s : suites) {
        if (s.first < d) id += s.second + " > ";
      }
      cases.add(id + m[1].str(), o);
      break;
    }
  }
  return cases.done("node-spec");
}

}  // namespace

TestCases parse_runner_cases(const std::vector<std::string_view>& lines) {
  for (auto parse : {go_json_cases, go_verbose_cases, cargo_cases, ctest_cases, node_tap_cases, node_spec_cases}) {
    TestCases t = parse(lines);
    if (!t.cases.empty()) return t;
  }
  return {};
}

}  // namespace lazyagent
