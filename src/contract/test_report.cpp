#include "contract/test_report.h"

#include "contract/runner_cases.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

namespace lazyagent {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxLine = 2000;  // longer lines are not runner lines

std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) nl = s.size();
    std::string_view line = s.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = nl + 1;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_ident(std::string_view s, bool dots) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dots && c == '.');
  });
}

// unittest's status words after " ... ".
std::optional<TestOutcome> unittest_status(std::string_view s) {
  if (s == "ok" || s == "expected failure") return TestOutcome::kPassed;
  if (s == "FAIL" || s == "ERROR" || s == "unexpected success") return TestOutcome::kFailed;
  if (starts_with(s, "skipped")) return TestOutcome::kSkipped;
  return std::nullopt;
}

// "test_x (mod.Class.test_x)" -> the id; Python < 3.11 prints "(mod.Class)".
std::optional<std::string> unittest_header(std::string_view line, std::string_view* rest) {
  const auto open = line.find(" (");
  if (open == std::string_view::npos) return std::nullopt;
  const auto close = line.find(')', open);
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view name = line.substr(0, open);
  const std::string_view where = line.substr(open + 2, close - open - 2);
  if (!is_ident(name, false) || !is_ident(where, true) || where.find('.') == std::string_view::npos) {
    return std::nullopt;
  }
  *rest = line.substr(close + 1);
  std::string id(where);
  const std::string suffix = "." + std::string(name);
  if (id.size() < suffix.size() || id.compare(id.size() - suffix.size(), suffix.size(), suffix) != 0) id += suffix;
  return id;
}

class Collector {
 public:
  void add(std::string id, TestOutcome o) {
    auto it = index_.find(id);
    if (it != index_.end()) {
      cases_[it->second].outcome = o;
      return;
    }
    index_[id] = cases_.size();
    cases_.push_back({std::move(id), o});
  }
  bool empty() const { return cases_.empty(); }
  std::vector<TestCaseResult> take() { return std::move(cases_); }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<TestCaseResult> cases_;
};

void parse_unittest(const std::vector<std::string_view>& lines, Collector& c) {
  std::string pending;  // a header whose status is on a later line ("" = none)
  for (std::string_view line : lines) {
    if (line.size() > kMaxLine) continue;
    std::string_view rest;
    if (auto id = unittest_header(line, &rest)) {
      pending.clear();
      if (rest.empty()) {
        pending = *id;  // a docstring line follows
      } else if (starts_with(rest, " ... ")) {
        if (auto st = unittest_status(rest.substr(5))) c.add(*id, *st);
        else pending = *id;  // the test printed before its status
      }
      continue;
    }
    if (pending.empty()) continue;
    // The status ends a line: "Docstring ... ok", or a bare "FAIL" after noise.
    const auto dots = line.rfind(" ... ");
    const std::string_view tail = dots == std::string_view::npos ? line : line.substr(dots + 5);
    if (auto st = unittest_status(tail)) {
      c.add(pending, *st);
      pending.clear();
    } else if (starts_with(line, "=====") || starts_with(line, "-----")) {
      pending.clear();
    }
  }
}

std::optional<TestOutcome> pytest_status(std::string_view s) {
  // XPASS: an xfail test that passed; pytest exits 0 on it unless strict.
  if (s == "PASSED" || s == "XFAIL" || s == "XPASS") return TestOutcome::kPassed;
  if (s == "FAILED" || s == "ERROR") return TestOutcome::kFailed;
  if (s == "SKIPPED") return TestOutcome::kSkipped;
  return std::nullopt;
}

bool is_node_id(std::string_view s) {
  return s.find("::") != std::string_view::npos && s.find(' ') == std::string_view::npos;
}

// "path::test STATUS ... [ 12%]"
void parse_pytest_verbose(const std::vector<std::string_view>& lines, Collector& c) {
  for (std::string_view line : lines) {
    if (line.size() > kMaxLine || line.empty() || line.back() != ']') continue;
    const auto sp = line.find(' ');
    if (sp == std::string_view::npos || !is_node_id(line.substr(0, sp))) continue;
    std::string_view after = line.substr(sp + 1);
    const auto end = after.find(' ');
    if (auto st = pytest_status(after.substr(0, end))) c.add(std::string(line.substr(0, sp)), *st);
  }
}

// The short test summary: "FAILED path::test - message", "ERROR ...", and
// with -rA (or -rp) "PASSED path::test", "XFAIL ...", "XPASS ...". Returns
// true when passing tests are named too (the list is then complete but for
// skips, which name a file and line, not a test).
bool parse_pytest_summary(const std::vector<std::string_view>& lines, Collector& c) {
  bool in_summary = false, passes = false;
  for (std::string_view line : lines) {
    if (line.size() > kMaxLine) continue;
    if (starts_with(line, "=") && line.find(" short test summary info ") != std::string_view::npos) {
      in_summary = true;
      continue;
    }
    if (!in_summary) continue;
    if (starts_with(line, "=")) break;
    const auto sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    const auto st = pytest_status(line.substr(0, sp));
    if (!st || line.substr(0, sp) == "SKIPPED") continue;
    std::string_view id = line.substr(sp + 1);
    id = id.substr(0, id.find(' '));
    if (!is_node_id(id) && id.find(".py") == std::string_view::npos) continue;
    c.add(std::string(id), *st);
    passes = passes || line.substr(0, sp) == "PASSED";
  }
  return passes;
}

struct Side {
  std::map<std::string, TestOutcome> by_id;
  bool complete = false;
};

Side side_of(const TestCases& t) {
  Side s;
  s.complete = t.complete;
  for (const auto& c : t.cases) s.by_id[c.id] = c.outcome;
  return s;
}

// absent: the side names every test and this one is not there.
enum class Seen { kPassed, kFailed, kSkipped, kAbsent };

Seen lookup(const Side& s, const std::string& id) {
  auto it = s.by_id.find(id);
  if (it == s.by_id.end()) return s.complete ? Seen::kAbsent : Seen::kPassed;  // partial: only failures are named
  switch (it->second) {
    case TestOutcome::kPassed: return Seen::kPassed;
    case TestOutcome::kFailed: return Seen::kFailed;
    case TestOutcome::kSkipped: return Seen::kSkipped;
  }
  return Seen::kAbsent;
}

}  // namespace

const char* outcome_name(TestOutcome o) {
  switch (o) {
    case TestOutcome::kPassed: return "passed";
    case TestOutcome::kFailed: return "failed";
    case TestOutcome::kSkipped: return "skipped";
  }
  return "?";
}

TestCases parse_test_cases(std::string_view output) {
  const auto lines = lines_of(output);
  TestCases out;
  Collector c;
  parse_unittest(lines, c);
  if (!c.empty()) {
    out.format = "unittest";
    out.complete = true;
  } else {
    parse_pytest_verbose(lines, c);
    if (!c.empty()) {
      out.format = "pytest";
      out.complete = true;
    }
    const bool all_named = parse_pytest_summary(lines, c);  // -v lists failures again; consistent
    if (!c.empty() && out.format.empty()) {
      out.format = all_named ? "pytest" : "pytest-summary";
      out.complete = all_named;
    }
  }
  if (c.empty()) return parse_runner_cases(lines);
  out.cases = c.take();
  return out;
}

Triage triage(const TestCases& baseline, const std::vector<TestCases>& runs) {
  Triage t;
  if (runs.empty() || baseline.format.empty() || runs[0].format.empty()) return t;
  t.available = true;
  // Flaky: a test named in two runs with different outcomes.
  std::set<std::string> flaky;
  std::map<std::string, TestOutcome> first_seen;
  for (const auto& run : runs) {
    for (const auto& c : run.cases) {
      auto [it, inserted] = first_seen.emplace(c.id, c.outcome);
      if (!inserted && it->second != c.outcome) flaky.insert(c.id);
    }
  }
  const Side before = side_of(baseline), after = side_of(runs[0]);
  std::vector<std::string> ids;
  for (const auto& c : runs[0].cases) ids.push_back(c.id);
  for (const auto& c : baseline.cases) {
    if (!after.by_id.count(c.id)) ids.push_back(c.id);
  }
  for (const auto& id : ids) {
    if (flaky.count(id)) {
      t.flaky.push_back(id);
      continue;
    }
    const Seen b = lookup(before, id), a = lookup(after, id);
    if (b == Seen::kAbsent) {
      t.added.push_back(id);
    } else if (b == Seen::kFailed) {
      // Skipping a failing test does not fix it. One that is gone was often
      // a placeholder (unittest's _FailedTest for an import error): no verdict.
      if (a != Seen::kAbsent) (a == Seen::kPassed ? t.fixed : t.still_failing).push_back(id);
    } else if (b == Seen::kPassed) {
      (a == Seen::kPassed ? t.passing : t.newly_broken).push_back(id);
    } else if (a == Seen::kFailed) {  // skipped before, failing now
      t.newly_broken.push_back(id);
    }
  }
  return t;
}

json cases_to_json(const TestCases& c) {
  json list = json::array();
  for (const auto& x : c.cases) list.push_back({{"id", x.id}, {"outcome", outcome_name(x.outcome)}});
  return json{{"format", c.format}, {"complete", c.complete}, {"tests", list}};
}

TestCases cases_from_json(const json& j) {
  TestCases t;
  if (!j.is_object()) return t;
  t.format = j.value("format", "");
  t.complete = j.value("complete", false);
  const json tests = j.value("tests", json::array());
  for (const auto& x : tests) {
    if (!x.is_object()) continue;
    const std::string o = x.value("outcome", "");
    t.cases.push_back({x.value("id", ""), o == "passed"   ? TestOutcome::kPassed
                                          : o == "skipped" ? TestOutcome::kSkipped
                                                           : TestOutcome::kFailed});
  }
  return t;
}

json triage_to_json(const Triage& t) {
  return json{{"available", t.available},       {"fixed", t.fixed},
              {"still_failing", t.still_failing}, {"newly_broken", t.newly_broken},
              {"passing", t.passing},           {"added", t.added},
              {"flaky", t.flaky}};
}

}  // namespace lazyagent
