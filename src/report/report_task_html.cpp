#include "report/report_task_html.h"

#include <map>

#include "report/html_text.h"
#include "report/report_svg.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::string task_dd(const std::string& term, const std::string& html) {
  return "<dt>" + term + "</dt><dd>" + html + "</dd>";
}

std::string task_code_line(const std::string& command) { return "<code class=\"cmd\">" + html_text(command) + "</code>"; }

std::string task_list(const std::vector<std::string>& items, const char* cls) {
  std::string o = std::string("<ul class=\"") + cls + "\">";
  for (const auto& s : items) o += "<li>" + html_text(s) + "</li>";
  return o + "</ul>";
}

std::string task_test_anchor(std::size_t task, std::size_t test) {
  return report_task_anchor(task) + "-t" + std::to_string(test);
}

// The triage groups, each test id linked to its row in the test table.
std::string task_triage_html(const ReportTask& t, std::size_t index) {
  if (!t.triage.is_object()) return "";
  std::map<std::string, std::size_t> row_of;
  for (std::size_t i = 0; i < t.tests.size(); ++i) row_of.emplace(t.tests[i].id, i);
  std::string o = "<h4>Triage against the unpatched seed</h4><dl class=\"triage\">";
  const std::string verdict = t.triage.value("verdict", "");
  if (!verdict.empty()) o += task_dd("verdict", html_text(verdict));
  if (!t.triage.value("available", false)) {
    o += task_dd("per-test", "not available (no per-test results on both sides)");
  }
  for (const char* group : {"fixed", "newly_broken", "still_failing", "flaky", "added", "passing"}) {
    if (!t.triage.contains(group) || !t.triage[group].is_array() || t.triage[group].empty()) continue;
    std::string links;
    for (const auto& id : t.triage[group]) {
      if (!id.is_string()) continue;
      const std::string s = id.get<std::string>();
      const auto row = row_of.find(s);
      links += row == row_of.end() ? "<li><code>" + html_text(s) + "</code></li>"
                                   : "<li><a href=\"#" + task_test_anchor(index, row->second) + "\"><code>" +
                                         html_text(s) + "</code></a></li>";
    }
    o += "<dt class=\"g-" + std::string(group) + "\">" + group + " (" + std::to_string(t.triage[group].size()) +
         ")</dt><dd><ul class=\"ids\">" + links + "</ul></dd>";
  }
  return o + "</dl>";
}

std::string task_tests_html(const ReportTask& t, std::size_t index) {
  if (t.tests.empty()) return "";
  std::string o = "<h4>Tests of the patched run (" + std::to_string(t.tests.size()) +
                  ")</h4><table class=\"tests\"><tr><th>test id</th><th>outcome</th></tr>";
  for (std::size_t i = 0; i < t.tests.size(); ++i) {
    o += "<tr id=\"" + task_test_anchor(index, i) + "\"><td><code>" + html_text(t.tests[i].id) +
         "</code></td><td class=\"o-" + (t.tests[i].outcome == "passed" ? std::string("passed") : "other") + "\">" +
         html_text(t.tests[i].outcome) + "</td></tr>";
  }
  return o + "</table>";
}

std::string task_timings_html(const ReportTask& t) {
  if (t.timings.empty()) return "";
  long total = 0;
  for (const auto& [step, ms] : t.timings) total += ms;
  // Text only: a bar per step per task (an SVG each) made a 500-task page slow to open.
  std::string o = "<h4>Step timings</h4><table class=\"timings\"><tr><th>step</th><th>ms</th><th>share</th></tr>";
  for (const auto& [step, ms] : t.timings) {
    o += "<tr><td>" + html_text(step) + "</td><td class=\"num\">" + std::to_string(ms) + "</td><td class=\"num\">" +
         std::to_string(total > 0 ? ms * 100 / total : 0) + "%</td></tr>";
  }
  return o + "</table>";
}

std::string task_commands_html(const ReportTask& t) {
  if (t.run_id.empty()) return "";
  std::string o = "<h4>Run " + html_text(t.run_id) + "</h4><ul class=\"cmds\">";
  o += "<li>" + task_code_line("lazyagent-oci verify " + t.run_id) + " recomputes its record's hashes</li>";
  if (t.has_change) {
    o += "<li>" + task_code_line("lazyagent-oci diff " + t.run_id) + " prints the proven change</li>";
    o += "<li>" + task_code_line("lazyagent-oci apply " + t.run_id + " --seed DIR") +
         " writes it into a work tree" + (t.category == "passed" ? "" : " (only a passed run's, or with --force)") +
         "</li>";
  }
  return o + "</ul>";
}

std::string task_attempts_html(const ReportTask& t) {
  if (t.attempts.size() <= 1) return "";
  std::string o = "<h4>Attempts</h4><ol class=\"attempts\">";
  for (const auto& a : t.attempts) {
    o += "<li>" + html_text(a.outcome) + (a.run_id.empty() ? "" : " <code>" + html_text(a.run_id) + "</code>") +
         (a.detail.empty() ? "" : ": " + html_text(a.detail)) + "</li>";
  }
  return o + "</ol>";
}

std::string task_resources_html(const ReportTask& t) {
  if (!t.cpu_ms && !t.memory_peak_bytes) return "";
  std::string o = "<h4>Resources of the final run</h4><dl>";
  if (t.cpu_ms) o += task_dd("CPU", std::to_string(*t.cpu_ms) + " ms");
  if (t.memory_peak_bytes) o += task_dd("memory peak", human_bytes(static_cast<double>(*t.memory_peak_bytes)));
  return o + "</dl>";
}

std::string task_reasons_attr(const ReportTask& t) {
  std::string s;
  for (const auto& c : t.reason_codes) s += (s.empty() ? "" : "|") + c;
  return html_attr(s);
}

}  // namespace

std::string report_task_anchor(std::size_t index) { return "task-" + std::to_string(index); }

bool report_task_suspicious_passed(const ReportTask& t) { return !t.suspicious.empty() && t.category == "passed"; }

std::string render_diff_html(const std::string& diff) {
  std::string o = "<pre class=\"diff\">";
  std::size_t pos = 0;
  while (pos < diff.size()) {
    std::size_t end = diff.find('\n', pos);
    if (end == std::string::npos) end = diff.size();
    const std::string line = diff.substr(pos, end - pos);
    const char* cls = "ctx";
    if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0 || line.rfind("diff ", 0) == 0 ||
        line.rfind("index ", 0) == 0) {
      cls = "meta";
    } else if (line.rfind("@@", 0) == 0) {
      cls = "hunk";
    } else if (!line.empty() && line[0] == '+') {
      cls = "add";
    } else if (!line.empty() && line[0] == '-') {
      cls = "del";
    }
    o += std::string("<span class=\"") + cls + "\">" + html_text(line) + "\n</span>";
    pos = end + 1;
  }
  return o + "</pre>";
}

std::string render_task_html(const ReportTask& t, std::size_t index) {
  const bool susp_passed = report_task_suspicious_passed(t);
  const int rank = susp_passed ? 0 : report_category_rank(t.category);
  std::string o = "<details class=\"task\" id=\"" + report_task_anchor(index) + "\" data-category=\"" +
                  html_attr(t.category) + "\" data-reasons=\"" + task_reasons_attr(t) + "\" data-ms=\"" +
                  std::to_string(t.ms) + "\" data-suspicious=\"" + (t.suspicious.empty() ? "0" : "1") +
                  "\" data-rank=\"" + std::to_string(rank) + "\" data-order=\"" + std::to_string(index) +
                  "\" data-id=\"" + html_attr(t.id) + "\">";
  o += "<summary><span class=\"badge k" + std::to_string(report_category_color(t.category)) + "\">" +
       html_text(t.category) + "</span> <code class=\"tid\">" + html_text(t.id) + "</code>";
  if (!t.suspicious.empty()) o += std::string(" <span class=\"susp\">") + (susp_passed ? "suspicious, passed" : "suspicious") + "</span>";
  o += " <span class=\"ms\">" + human_ms(static_cast<double>(t.ms)) + "</span>";
  if (!t.reason.empty()) o += " <span class=\"reason\">" + html_text(t.reason) + "</span>";
  o += "</summary><div class=\"body\"><dl>";
  o += task_dd("category", html_text(t.category) + (t.isolation_violation ? " (isolation violation)" : ""));
  if (!t.reason.empty()) o += task_dd("reason", html_text(t.reason));
  if (!t.reason_codes.empty()) {
    std::string codes;
    for (const auto& c : t.reason_codes) codes += (codes.empty() ? "" : ", ") + std::string("<code>") + html_text(c) + "</code>";
    o += task_dd("reason codes", codes);
  }
  if (t.line > 0) o += task_dd("task file line", std::to_string(t.line));
  o += task_dd("time", human_ms(static_cast<double>(t.ms)) + " (" + std::to_string(t.attempts.size()) + " attempt(s))");
  if (!t.patch_format.empty()) {
    std::string changed;
    for (const auto& p : t.changed_paths) changed += (changed.empty() ? "" : ", ") + std::string("<code>") + html_text(p) + "</code>";
    o += task_dd("patch", html_text(t.patch_format) + ", +" + std::to_string(t.added) + " -" +
                              std::to_string(t.removed) + " line(s)" + (changed.empty() ? "" : ": " + changed));
  }
  if (t.test_exit_code >= 0) o += task_dd("test exit code", std::to_string(t.test_exit_code));
  // The verdict's signature state (docs/signing.md): checked with `verify --key`, not here.
  o += task_dd("signature", t.attestation_keyid.empty()
                                ? std::string("not signed")
                                : "signed, key <code>" + html_text(t.attestation_keyid.substr(0, 16)) +
                                      "</code> (<code>" + html_text(t.attestation_path) + "</code>)");
  o += "</dl>";
  if (!t.findings.empty()) o += "<h4>Refused: contract findings</h4>" + task_list(t.findings, "findings");
  if (!t.suspicious.empty()) o += "<h4>Suspicious code in the patch</h4>" + task_list(t.suspicious, "findings susp");
  o += task_attempts_html(t) + task_triage_html(t, index) + task_tests_html(t, index);
  if (!t.diff.empty()) {
    o += "<h4>Proven change" + std::string(t.diff_cut ? " (first " + std::to_string(kReportDiffBytes / 1024) + " KiB)" : "") +
         "</h4>" + render_diff_html(t.diff);
  } else if (!t.diff_note.empty() && t.has_change) {
    o += "<p class=\"note\">diff: " + html_text(t.diff_note) + "</p>";
  }
  if (!t.test_output.empty()) {
    o += "<h4>Test output" + std::string(t.test_output_cut ? " (cut: its tail)" : "") +
         "</h4><pre class=\"out\">" + html_text(t.test_output) + "</pre>";
  }
  o += task_timings_html(t) + task_resources_html(t) + task_commands_html(t);
  return o + "</div></details>\n";
}

}  // namespace lazyagent
