#include "report/report_data.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::string report_read_file(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  *ok = static_cast<bool>(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string json_str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

long json_long(const json& j, const char* key, long fallback) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<long>() : fallback;
}

// "code [path:line]: message" for a finding object.
std::string describe_finding(const json& f) {
  std::string s = json_str(f, "code");
  const std::string path = json_str(f, "path");
  if (!path.empty()) {
    s += " [" + path;
    if (f.contains("line") && f["line"].is_number()) s += ":" + std::to_string(f["line"].get<long>());
    s += "]";
  }
  const std::string message = json_str(f, "message");
  if (!message.empty()) s += ": " + message;
  return s;
}

// The first line of a text, bounded (a reason is one line in the page).
std::string one_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  bool cut = false;
  line = truncate_utf8(line, 600, cut);
  return cut ? line + "…" : line;
}

void add_unique(std::vector<std::string>* v, const std::string& s) {
  if (!s.empty() && std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

// Summary groups that are not categories.
bool is_summary_side_group(const std::string& key) {
  return key == "skipped" || key == "not_run" || key == "suspicious" || key == "suspicious_passed" ||
         key == "changed" || key == "attestations";
}

std::vector<std::string> list_result_files(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0 && n[0] != '.') names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

const std::vector<std::string>& known_report_categories() {
  static const std::vector<std::string> k = {"passed", "failed", "flaky", "refused",
                                             "infra_error", "isolation_violation", "not_run"};
  return k;
}

int report_category_color(const std::string& category) {
  const auto& k = known_report_categories();
  const auto it = std::find(k.begin(), k.end(), category);
  if (it != k.end()) return 1 + static_cast<int>(it - k.begin());  // k1..k7
  unsigned h = 0;
  for (unsigned char c : category) h = h * 31 + c;
  return 8 + static_cast<int>(h % 4);  // k8..k11 for names this build does not know
}

int report_category_rank(const std::string& category) {
  static const std::vector<std::string> order = {"isolation_violation", "infra_error", "failed", "flaky",
                                                 "refused", "not_run"};
  const auto it = std::find(order.begin(), order.end(), category);
  if (it != order.end()) return 1 + static_cast<int>(it - order.begin());
  return category == "passed" ? 9 : 7;  // unknown ones before the passes
}

ReportTask report_task_from_result(const std::string& id, const json& r) {
  ReportTask t;
  t.id = json_str(r, "task_id").empty() ? id : json_str(r, "task_id");
  const json ev = r.is_object() && r.contains("eval") && r["eval"].is_object() ? r["eval"] : json::object();
  t.category = json_str(ev, "category");
  if (t.category.empty()) t.category = "unknown";
  t.line = static_cast<int>(json_long(ev, "line", 0));
  t.ms = json_long(ev, "ms", 0);
  if (ev.contains("attempts") && ev["attempts"].is_array()) {
    for (const auto& a : ev["attempts"]) {
      t.attempts.push_back({json_str(a, "outcome"), one_line(json_str(a, "detail")), json_str(a, "run_id")});
    }
  }
  t.run_id = json_str(r, "run_id");
  if (t.run_id.empty() && !t.attempts.empty()) t.run_id = t.attempts.back().run_id;
  const std::string error = json_str(r, "error");
  t.reason = one_line(!error.empty() ? error : json_str(r, "reason"));
  if (!error.empty()) add_unique(&t.reason_codes, json_str(r, "error_kind"));
  if (r.contains("findings") && r["findings"].is_array()) {
    for (const auto& f : r["findings"]) {
      t.findings.push_back(describe_finding(f));
      add_unique(&t.reason_codes, json_str(f, "code"));
    }
  }
  if (r.contains("suspicious") && r["suspicious"].is_array()) {
    for (const auto& f : r["suspicious"]) t.suspicious.push_back(describe_finding(f));
  }
  t.isolation_violation = t.category == "isolation_violation" || json_str(r, "category") == "isolation_violation" ||
                          json_str(r, "error_kind") == "isolation";
  if (r.contains("triage") && r["triage"].is_object()) t.triage = r["triage"];
  if (r.contains("attestation") && r["attestation"].is_object()) {
    t.attestation_keyid = json_str(r["attestation"], "keyid");
    t.attestation_path = json_str(r["attestation"], "path");
  }
  if (r.contains("tests") && r["tests"].is_object() && r["tests"].contains("tests") && r["tests"]["tests"].is_array()) {
    for (const auto& c : r["tests"]["tests"]) t.tests.push_back({json_str(c, "id"), json_str(c, "outcome")});
  }
  bool cut = false;
  t.test_output = tail_utf8(json_str(r, "test_output"), kReportOutputTailBytes, cut);
  t.test_output_cut = cut || (r.is_object() && r.value("test_output_truncated", false));
  t.test_exit_code = static_cast<int>(json_long(r, "test_exit_code", -1));
  if (r.contains("timings") && r["timings"].is_object()) {
    for (const auto& [step, ms] : r["timings"].items()) {
      if (ms.is_number()) t.timings.emplace_back(step, ms.get<long>());
    }
  }
  // The pipeline's order (the JSON object keeps its keys sorted); names it does not know after.
  static const std::vector<std::string> step_order = {"plan", "baseline", "validate", "snapshot", "engine",
                                                      "image", "copy", "create", "verify", "queue", "run",
                                                      "logs", "remove"};
  auto step_rank = [](const std::string& step) {
    return static_cast<std::size_t>(std::find(step_order.begin(), step_order.end(), step) - step_order.begin());
  };
  std::stable_sort(t.timings.begin(), t.timings.end(),
                   [&](const auto& a, const auto& b) { return step_rank(a.first) < step_rank(b.first); });
  if (r.contains("resources") && r["resources"].is_object() && r["resources"].value("available", false)) {
    const json& res = r["resources"];
    if (res.contains("cpu_ms") && res["cpu_ms"].is_number_integer()) t.cpu_ms = res["cpu_ms"].get<std::int64_t>();
    if (res.contains("memory_peak_bytes") && res["memory_peak_bytes"].is_number_integer()) {
      t.memory_peak_bytes = res["memory_peak_bytes"].get<std::int64_t>();
    }
  }
  t.patch_format = json_str(r, "patch_format");
  t.has_change = r.is_object() && r.contains("diff_sha256");
  if (r.contains("diff_stats") && r["diff_stats"].is_object()) {
    t.added = json_long(r["diff_stats"], "added", 0);
    t.removed = json_long(r["diff_stats"], "removed", 0);
  }
  if (r.contains("changed_paths") && r["changed_paths"].is_array()) {
    for (const auto& p : r["changed_paths"]) {
      if (p.is_string()) t.changed_paths.push_back(p.get<std::string>());
    }
  }
  return t;
}

std::vector<std::string> report_categories(const json& summary, const std::vector<ReportTask>& tasks) {
  std::set<std::string> present;
  if (summary.is_object()) {
    for (const auto& [k, v] : summary.items()) {
      if (v.is_object() && v.contains("count") && v.contains("ids") && !is_summary_side_group(k)) present.insert(k);
    }
  }
  for (const auto& t : tasks) present.insert(t.category);
  std::vector<std::string> out;
  for (const auto& k : known_report_categories()) {
    if (present.erase(k)) out.push_back(k);
  }
  out.insert(out.end(), present.begin(), present.end());  // unknown ones, alphabetically
  return out;
}

Result<ReportData> load_report_data(const std::string& out_dir, const ReportDiffSource& diffs) {
  ReportData d;
  d.out_dir = out_dir;
  bool ok = false;
  const std::string text = report_read_file(out_dir + "/summary.json", &ok);
  if (!ok) {
    return usage_error("report: no summary.json in " + out_dir +
                       " (give the --out directory of an eval that has finished or been interrupted)");
  }
  d.summary = json::parse(text, nullptr, false);
  if (!d.summary.is_object()) return usage_error("report: " + out_dir + "/summary.json is not a JSON object");
  // The tasks this summary counts (a reused --out may hold results of tasks
  // no longer in the task file: those are left out, as the summary does).
  std::set<std::string> counted;
  for (const auto& [k, v] : d.summary.items()) {
    if (k == "skipped" || k == "suspicious" || k == "suspicious_passed" || k == "changed" || !v.is_object()) continue;
    if (!v.contains("ids") || !v["ids"].is_array()) continue;
    for (const auto& id : v["ids"]) {
      if (id.is_string()) counted.insert(id.get<std::string>());
    }
  }
  std::size_t stale = 0;
  std::map<std::string, ReportTask> by_id;
  for (const auto& name : list_result_files(out_dir + "/results")) {
    const std::string path = out_dir + "/results/" + name;
    const json r = json::parse(report_read_file(path, &ok), nullptr, false);
    if (!ok || !r.is_object()) {
      d.problems.push_back("unreadable result file: results/" + name);
      continue;
    }
    ReportTask t = report_task_from_result(name.substr(0, name.size() - 5), r);
    if (!counted.count(t.id)) {
      ++stale;
      continue;
    }
    if (diffs && !t.run_id.empty() && r.contains("diff_sha256")) {
      auto diff = diffs(t.run_id);
      if (diff) {
        t.diff = truncate_utf8(*diff, kReportDiffBytes, t.diff_cut);
      } else {
        t.diff_note = one_line(diff.error().message);
      }
    } else if (!t.has_change) {
      t.diff_note = "no proven change";
    }
    by_id[t.id] = std::move(t);
  }
  if (d.summary.contains("not_run") && d.summary["not_run"].is_object() && d.summary["not_run"]["ids"].is_array()) {
    for (const auto& id : d.summary["not_run"]["ids"]) {
      if (!id.is_string() || by_id.count(id.get<std::string>())) continue;
      ReportTask t;
      t.id = id.get<std::string>();
      t.category = "not_run";
      t.reason = "interrupted before its verdict: rerun the eval with the same --out";
      by_id[t.id] = std::move(t);
    }
  }
  if (stale > 0) {
    d.problems.push_back(std::to_string(stale) + " result file(s) of tasks summary.json does not count (an earlier "
                         "task file's): left out");
  }
  for (auto& [id, t] : by_id) d.tasks.push_back(std::move(t));
  // Task-file order (a task without a line, e.g. not run, after the others).
  std::stable_sort(d.tasks.begin(), d.tasks.end(), [](const ReportTask& a, const ReportTask& b) {
    const int la = a.line > 0 ? a.line : 1 << 30, lb = b.line > 0 ? b.line : 1 << 30;
    return la < lb;
  });
  d.categories = report_categories(d.summary, d.tasks);
  return d;
}

}  // namespace lazyagent
