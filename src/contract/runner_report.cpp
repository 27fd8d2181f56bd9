// find_runner_report and the report's JSON (runner_report.h).
#include "contract/runner_report.h"

#include <regex>
#include <vector>

namespace lazyagent {
namespace {

constexpr std::size_t kMaxSummaryLine = 400;

// Counts in runner reports are written by the code under test. std::stol threw
// std::out_of_range on "Ran 99999999999999999999 tests" (ending the whole
// orchestrator), and "9223372036854775807 passed, 1 failed" overflowed the sum
// (found writing fuzz/verdict_fuzzer.cpp, confirmed with it). A count saturates
// here instead, far above any real suite and far below where sums overflow.
constexpr long kMaxCount = 1000000000;

// `digits` matched \d+ (ASCII digits only).
long to_count(std::string_view digits) {
  long n = 0;
  for (const char c : digits) {
    n = n * 10 + (c - '0');
    if (n >= kMaxCount) return kMaxCount;
  }
  return n;
}

// Sums of counts (cargo's blocks, go's packages) saturate too, far above any
// real suite: each term is at most kMaxCount, and there are fewer terms than
// lines in a bounded output, so a + b never overflows before this cap.
constexpr long kMaxSum = 1000000000000000;
long add_counts(long a, long b) { return a + b >= kMaxSum ? kMaxSum : a + b; }

// Colour: SGR escapes "ESC [ digits;... m" are dropped (pytest --color=yes,
// cargo and go with a colour forcing setting). Anything else stays.
std::string strip_sgr(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < line.size() && ((line[j] >= '0' && line[j] <= '9') || line[j] == ';')) ++j;
      if (j < line.size() && line[j] == 'm') {
        i = j;
        continue;
      }
    }
    out += line[i];
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) nl = s.size();
    std::string_view line = s.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Runner summaries are short; std::regex recurses per character and
    // would overflow the stack on a megabyte-long line of hostile output.
    lines.push_back(line.size() > kMaxSummaryLine ? std::string() : strip_sgr(line));
    start = nl + 1;
  }
  return lines;
}

using ReportLines = std::vector<std::string>;

void finish_report(RunnerReport& r, const char* runner) {
  r.runner = runner;
  r.tests_run = add_counts(r.passed, r.failed);
  r.success = r.failed == 0 && r.passed > 0;
  r.found = true;
}

// unittest: "Ran N test(s) in T" then, a blank line later, "OK ..." or "FAILED (...)".
bool try_unittest(const ReportLines& lines, std::size_t i, RunnerReport& r) {
  static const std::regex ran(R"(^Ran (\d+) tests? in [0-9.]+s$)");
  std::smatch m;
  if (!std::regex_match(lines[i], m, ran)) return false;
  std::size_t j = i + 1;
  while (j < lines.size() && lines[j].empty()) ++j;
  if (j >= lines.size()) return false;
  const std::string& status = lines[j];
  r.runner = "unittest";
  r.tests_run = to_count(m[1].str());
  if (status == "OK" || status.rfind("OK (", 0) == 0) {
    r.success = true;
    std::smatch f;
    if (std::regex_search(status, f, std::regex("skipped=(\\d+)"))) r.skipped = to_count(f[1].str());
  } else if (status.rfind("FAILED", 0) == 0) {
    // "FAILED (failures=2, errors=1)": the numbers follow the '='.
    std::smatch f;
    long failed = 0;
    for (const char* key : {"failures=(\\d+)", "errors=(\\d+)"}) {
      if (std::regex_search(status, f, std::regex(key))) failed = add_counts(failed, to_count(f[1].str()));
    }
    r.failed = failed;
  } else if (status.rfind("NO TESTS RAN", 0) == 0) {
    r.tests_run = 0;
  } else {
    return false;
  }
  r.passed = r.tests_run > r.failed ? r.tests_run - r.failed : 0;
  r.found = true;
  return true;
}

// The body of pytest's summary: "3 failed, 2 passed, 1 skipped, 1 xfailed,
// 1 xpassed, 1 error, 2 warnings" or "no tests ran". Only these words.
bool pytest_body(const std::string& body, RunnerReport& r) {
  static const std::regex item(
      R"(^(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)$)");
  if (body == "no tests ran") {
    finish_report(r, "pytest");
    return true;
  }
  std::size_t start = 0;
  long failed = 0, passed = 0, skipped = 0;
  bool any = false;
  while (start <= body.size()) {
    std::size_t comma = body.find(", ", start);
    if (comma == std::string::npos) comma = body.size();
    const std::string part = body.substr(start, comma - start);
    std::smatch m;
    if (!std::regex_match(part, m, item)) return false;
    const long n = to_count(m[1].str());
    const std::string w = m[2];
    if (w == "passed" || w == "xfailed" || w == "xpassed") {
      passed = add_counts(passed, n);  // xpassed without strict: pytest exits 0
    } else if (w == "failed" || w.rfind("error", 0) == 0) {
      failed = add_counts(failed, n);
    } else if (w == "skipped") {
      skipped = add_counts(skipped, n);
    }
    any = any || (w != "warning" && w != "warnings");
    start = comma + 2;
  }
  if (!any) return false;
  r.passed = passed;
  r.failed = failed;
  r.skipped = skipped;
  finish_report(r, "pytest");
  return true;
}

// pytest's closing line: "===== 3 passed, 1 skipped in 0.12s =====", and under
// -q the same without the frame.
bool try_pytest(const std::string& line, RunnerReport& r) {
  static const std::regex framed(R"(^=+ (.*) in [0-9.]+s( \([0-9:]+\))? =+$)");
  static const std::regex bare(R"(^([0-9a-z ,]+) in [0-9.]+s( \([0-9:]+\))?$)");
  std::smatch m;
  if (!std::regex_match(line, m, framed) && !std::regex_match(line, m, bare)) return false;
  return pytest_body(m[1], r);
}

// The plain closing line: "N passed, M failed" (optionally ", K skipped").
bool try_plain(const std::string& line, RunnerReport& r) {
  static const std::regex plain(R"(^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$)");
  std::smatch m;
  if (!std::regex_match(line, m, plain)) return false;
  r.passed = to_count(m[1].str());
  r.failed = to_count(m[2].str());
  if (m[3].matched) r.skipped = to_count(m[3].str());
  finish_report(r, "plain");
  return true;
}

// ctest: "100% tests passed, 0 tests failed out of 19" / "No tests were found!!!".
bool try_ctest(const std::string& line, RunnerReport& r) {
  static const std::regex summary(R"(^(\d+)% tests passed, (\d+) tests? failed out of (\d+)$)");
  std::smatch m;
  if (line == "No tests were found!!!") {
    finish_report(r, "ctest");
    return true;
  }
  if (!std::regex_match(line, m, summary)) return false;
  const long total = to_count(m[3].str());
  r.failed = to_count(m[2].str());
  if (r.failed > total) return false;
  r.passed = total - r.failed;
  finish_report(r, "ctest");
  return true;
}

// cargo: each test binary (unit tests, each integration test, doc-tests)
// prints "running N tests" and, when it finishes, "test result: ok. P passed;
// F failed; I ignored; M measured; X filtered out; finished in 0.00s".
// All blocks are summed. A block whose result line is missing (a binary that
// exited early) or disagrees with its "running N" voids the report.
const std::regex& cargo_result() {
  static const std::regex re(
      R"(^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered out(; finished in [0-9.]+s)?$)");
  return re;
}

bool try_cargo(const ReportLines& lines, std::size_t last, RunnerReport& r) {
  std::smatch m;
  if (!std::regex_match(lines[last], m, cargo_result())) return false;
  static const std::regex running(R"(^running (\d+) tests?$)");
  long expect = -1;  // the open block's "running N", -1 = none open
  bool blocks_ok = true;
  // Every block of the whole output: one opened after the last result line
  // (a test binary that started and never reported) voids the report too.
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch k;
    if (std::regex_match(lines[i], k, running)) {
      if (expect >= 0) blocks_ok = false;  // the previous block never reported
      expect = to_count(k[1].str());
    } else if (i <= last && std::regex_match(lines[i], k, cargo_result())) {
      const long p = to_count(k[2].str()), f = to_count(k[3].str()), ig = to_count(k[4].str()),
                 me = to_count(k[5].str());
      if (expect < 0 || add_counts(add_counts(p, f), add_counts(ig, me)) != expect) blocks_ok = false;
      if ((k[1] == "ok") != (f == 0)) blocks_ok = false;
      r.passed = add_counts(r.passed, p);
      r.failed = add_counts(r.failed, f);
      r.skipped = add_counts(r.skipped, ig);
      expect = -1;
    }
  }
  if (expect >= 0) blocks_ok = false;
  if (!blocks_ok) return false;
  finish_report(r, "cargo");
  return true;
}

// go test: "ok  \tpkg\t0.004s", "FAIL\tpkg\t0.005s", "FAIL\tpkg [build failed]",
// "?   \tpkg\t[no test files]", and a bare "FAIL" closing a failed run.
// With -v, top-level "--- PASS: TestX (0.00s)" lines count tests instead.
bool go_package_line(const std::string& line, bool* ok, bool* no_tests) {
  static const std::regex pkg(R"(^(ok|FAIL|\?)\s+(\S+)(\s+(.*))?$)");
  std::smatch m;
  if (!std::regex_match(line, m, pkg)) return false;
  const std::string rest = m[4];
  if (m[1] == "?") {
    if (rest != "[no test files]") return false;
    *ok = true;
    *no_tests = true;
    return true;
  }
  static const std::regex time(R"(^([0-9.]+s|\(cached\))( \[no tests to run\])?(\s+coverage: .*)?$)");
  std::smatch t;
  const bool timed = std::regex_match(rest, t, time);
  if (m[1] == "ok" && !timed) return false;
  if (m[1] == "FAIL" && !timed && rest.rfind("[", 0) != 0) return false;
  *ok = m[1] == "ok";
  *no_tests = timed && t[2].matched;
  return true;
}

bool try_go(const ReportLines& lines, std::size_t last, RunnerReport& r) {
  bool ok = false, none = false;
  const bool closing_fail = lines[last] == "FAIL";
  if (!closing_fail && !go_package_line(lines[last], &ok, &none)) return false;
  long pkg_ok = 0, pkg_failed = 0, t_pass = 0, t_fail = 0, t_skip = 0;
  bool verbose = false, any_pkg = false;  // -v: "=== RUN   TestX" lines
  static const std::regex verdict(R"(^--- (PASS|FAIL|SKIP): (\S+) \([0-9.]+s\)$)");
  for (std::size_t i = 0; i <= last; ++i) {
    std::smatch m;
    if (lines[i].rfind("=== RUN   ", 0) == 0) verbose = true;
    if (std::regex_match(lines[i], m, verdict)) {  // top level only: subtests are indented
      (m[1] == "PASS" ? t_pass : m[1] == "FAIL" ? t_fail : t_skip) += 1;
    } else if (go_package_line(lines[i], &ok, &none)) {
      any_pkg = true;
      if (!ok) ++pkg_failed;
      else if (!none) ++pkg_ok;
    }
  }
  if (!any_pkg) return false;
  if (verbose) {
    r.passed = t_pass;
    r.failed = t_fail + (t_fail == 0 ? pkg_failed : 0);  // a package that failed to build
    r.skipped = t_skip;
  } else {
    r.unit = "packages";
    r.passed = pkg_ok;
    r.failed = pkg_failed;
  }
  finish_report(r, "go");
  return true;
}

// go test -json: one JSON event per line; the run ends with a package event
// ({"Action":"pass"|"fail","Package":...} with no "Test").
bool try_go_json(const ReportLines& lines, std::size_t last, RunnerReport& r) {
  if (lines[last].empty() || lines[last][0] != '{') return false;
  auto event = [](const std::string& line) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("Action") || !j["Action"].is_string() || !j.contains("Package")) {
      return nlohmann::json();
    }
    return j;
  };
  const nlohmann::json end = event(lines[last]);
  if (end.is_null() || end.contains("Test")) return false;
  const std::string act = end["Action"].get<std::string>();
  if (act != "pass" && act != "fail" && act != "skip") return false;
  long t_pass = 0, t_fail = 0, t_skip = 0, pkg_fail = 0;
  for (std::size_t i = 0; i <= last; ++i) {
    if (lines[i].empty() || lines[i][0] != '{') continue;
    const nlohmann::json e = event(lines[i]);
    if (e.is_null()) continue;
    const std::string a = e["Action"].get<std::string>();
    if (a != "pass" && a != "fail" && a != "skip") continue;
    if (!e.contains("Test")) {
      if (a == "fail") ++pkg_fail;
      continue;
    }
    if (!e["Test"].is_string() || e["Test"].get<std::string>().find('/') != std::string::npos) continue;
    (a == "pass" ? t_pass : a == "fail" ? t_fail : t_skip) += 1;
  }
  r.passed = t_pass;
  r.failed = t_fail + (t_fail == 0 ? pkg_fail : 0);
  r.skipped = t_skip;
  finish_report(r, "go-json");
  return true;
}

// node --test: the closing counts, TAP ("# tests 5" "# suites 1" "# pass 4"
// "# fail 1" "# cancelled 0" "# skipped 1" "# todo 1" "# duration_ms 51") or
// spec (the same after "ℹ "). Found at its last line, "duration_ms".
bool try_node(const ReportLines& lines, std::size_t last, RunnerReport& r) {
  static const std::regex item(R"(^(# |\xE2\x84\xB9 )(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([0-9.]+)$)");
  std::smatch m;
  if (!std::regex_match(lines[last], m, item) || m[2] != "duration_ms") return false;
  const std::string prefix = m[1];
  long tests = -1, pass = -1, fail = -1, cancelled = 0, skipped = 0, todo = 0;
  for (std::size_t i = last; i-- > 0 && last - i <= 8;) {
    if (!std::regex_match(lines[i], m, item) || m[1] != prefix) break;
    const std::string k = m[2];
    if (m[3].str().find('.') != std::string::npos) return false;  // counts are whole numbers
    const long n = to_count(m[3].str());
    if (k == "tests") tests = n;
    else if (k == "pass") pass = n;
    else if (k == "fail") fail = n;
    else if (k == "cancelled") cancelled = n;
    else if (k == "skipped") skipped = n;
    else if (k == "todo") todo = n;
    if (k == "tests") break;
  }
  if (tests < 0 || pass < 0 || fail < 0) return false;
  r.passed = pass;
  r.failed = add_counts(fail, cancelled);
  r.skipped = add_counts(skipped, todo);
  finish_report(r, "node");
  return true;
}

}  // namespace

RunnerReport find_runner_report(std::string_view output) {
  const ReportLines lines = split_lines(output);
  for (std::size_t k = lines.size(); k-- > 0;) {
    if (lines[k].empty()) continue;
    RunnerReport r;
    if (try_unittest(lines, k, r) || try_pytest(lines[k], r) || try_plain(lines[k], r) ||
        try_ctest(lines[k], r) || try_cargo(lines, k, r) || try_node(lines, k, r) ||
        try_go_json(lines, k, r) || try_go(lines, k, r)) {
      return r;
    }
  }
  return {};
}

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

}  // namespace lazyagent
