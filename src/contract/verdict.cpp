#include "contract/verdict.h"

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

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) nl = s.size();
    std::string_view line = s.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

long count_of(const std::string& text, const char* word) {
  std::smatch m;
  const std::regex re(std::string("(\\d+) ") + word);
  return std::regex_search(text, m, re) ? to_count(m[1].str()) : 0;
}

// unittest: "Ran N test(s) in T" then, a blank line later, "OK ..." or "FAILED (...)".
bool try_unittest(const std::vector<std::string_view>& lines, std::size_t i, RunnerReport& r) {
  static const std::regex ran(R"(^Ran (\d+) tests? in [0-9.]+s$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(lines[i].begin(), lines[i].end(), m, ran)) return false;
  std::size_t j = i + 1;
  while (j < lines.size() && lines[j].empty()) ++j;
  if (j >= lines.size()) return false;
  if (lines[j].size() > kMaxSummaryLine) return false;
  const std::string status(lines[j]);
  r.runner = "unittest";
  r.tests_run = to_count(m[1].str());
  if (status == "OK" || status.rfind("OK (", 0) == 0) {
    r.success = true;
  } else if (status.rfind("FAILED", 0) == 0) {
    // "FAILED (failures=2, errors=1)": the numbers follow the '='.
    std::smatch f;
    long failed = 0;
    for (const char* key : {"failures=(\\d+)", "errors=(\\d+)"}) {
      if (std::regex_search(status, f, std::regex(key))) failed += to_count(f[1].str());
    }
    r.failed = failed;
  } else if (status.rfind("NO TESTS RAN", 0) == 0) {
    r.tests_run = 0;
  } else {
    return false;
  }
  r.found = true;
  return true;
}

// pytest's closing line: "===== 3 passed, 1 skipped in 0.12s =====" (or "no tests ran").
bool try_pytest(std::string_view line, RunnerReport& r) {
  static const std::regex summary(R"(^=+ (.*) in [0-9.]+s( \([0-9:]+\))? =+$)");
  const std::string s(line);
  std::smatch m;
  if (!std::regex_match(s, m, summary)) return false;
  const std::string body = m[1];
  if (body.find("passed") == std::string::npos && body.find("failed") == std::string::npos &&
      body.find("error") == std::string::npos && body.find("no tests ran") == std::string::npos) {
    return false;
  }
  r.runner = "pytest";
  const long passed = count_of(body, "passed");
  r.failed = count_of(body, "failed") + count_of(body, "error");
  r.tests_run = passed + r.failed;
  r.success = r.failed == 0 && passed > 0;
  r.found = true;
  return true;
}

// The plain closing line: "N passed, M failed" (optionally ", K skipped").
bool try_plain(std::string_view line, RunnerReport& r) {
  static const std::regex plain(R"(^(?:\w+: )?(\d+) passed, (\d+) failed(?:, \d+ skipped)?$)");
  const std::string s(line);
  std::smatch m;
  if (!std::regex_match(s, m, plain)) return false;
  r.runner = "plain";
  const long passed = to_count(m[1].str());
  r.failed = to_count(m[2].str());
  r.tests_run = passed + r.failed;
  r.success = r.failed == 0 && passed > 0;
  r.found = true;
  return true;
}

}  // namespace

RunnerReport find_runner_report(std::string_view output) {
  const auto lines = split_lines(output);
  for (std::size_t k = lines.size(); k-- > 0;) {
    // Runner summaries are short; std::regex recurses per character and
    // would overflow the stack on a megabyte-long line of hostile output.
    if (lines[k].size() > kMaxSummaryLine) continue;
    RunnerReport r;
    if (try_unittest(lines, k, r) || try_pytest(lines[k], r) || try_plain(lines[k], r)) return r;
  }
  return {};
}

Verdict judge(const RunOutcome& o, std::string_view output) {
  Verdict v;
  v.report = find_runner_report(output);
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
    v.reason = "no test report: the test command exited 0 but no test runner reported results";
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
