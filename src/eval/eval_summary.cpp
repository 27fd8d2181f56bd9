#include "eval/eval_summary.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <sstream>

#include "util/terminal_text.h"

namespace lazyagent {

namespace {

void add_resources(ResourceTotals* t, const nlohmann::json& r) {
  if (!r.is_object()) return;
  if (!r.value("available", false)) {
    ++t->unavailable;
    return;
  }
  ++t->measured;
  auto num = [&](const char* k) -> std::int64_t {
    return r.contains(k) && r[k].is_number_integer() ? r[k].get<std::int64_t>() : 0;
  };
  t->cpu_ms += num("cpu_ms");
  t->memory_peak_bytes = std::max(t->memory_peak_bytes, num("memory_peak_bytes"));
  t->pids_peak = std::max(t->pids_peak, num("pids_peak"));
  t->tmpfs_peak_bytes = std::max(t->tmpfs_peak_bytes, num("tmpfs_peak_bytes"));
}

}  // namespace

EvalSummary summarize(const std::vector<std::string>& task_ids, const std::vector<EvalRow>& rows) {
  EvalSummary s;
  s.total = task_ids.size();
  std::map<std::string, const EvalRow*> by_id;
  for (const auto& r : rows) by_id[r.id] = &r;
  for (const auto& id : task_ids) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      s.not_run.push_back(id);
      continue;
    }
    s.by_category[static_cast<int>(it->second->category)].push_back(id);
    if (it->second->skipped) s.skipped.push_back(id);
    if (!it->second->patch_format.empty()) ++s.patch_formats[it->second->patch_format];
    add_resources(&s.resources, it->second->resources);
    s.added += it->second->added;
    s.removed += it->second->removed;
    for (const auto& part : it->second->changed) s.changed[part].push_back(id);
    if (!it->second->attestation.empty()) s.attestations.emplace_back(id, it->second->attestation);
    if (it->second->suspicious) {
      s.suspicious.push_back(id);
      if (it->second->category == Category::kPassed) s.suspicious_passed.push_back(id);
    }
  }
  return s;
}

nlohmann::json summary_to_json(const EvalSummary& s) {
  auto group = [](const std::vector<std::string>& ids) {
    return nlohmann::json{{"count", ids.size()}, {"ids", ids}};
  };
  nlohmann::json j = {{"total", s.total}};
  std::size_t finished = 0;
  for (Category c : kAllCategories) {
    j[category_name(c)] = group(s.ids(c));
    finished += s.ids(c).size();
  }
  j["finished"] = finished;
  j["skipped"] = group(s.skipped);
  j["not_run"] = group(s.not_run);
  // Why tasks with an earlier result ran again: the parts of their resume
  // key that changed (eval_resume.h).
  nlohmann::json changed = nlohmann::json::object();
  for (const auto& [part, ids] : s.changed) changed[part] = group(ids);
  j["changed"] = changed;
  j["suspicious"] = group(s.suspicious);
  j["suspicious_passed"] = group(s.suspicious_passed);
  nlohmann::json attestations = nlohmann::json::object();
  for (const auto& [id, path] : s.attestations) attestations[id] = path;
  j["attestations"] = {{"count", s.attestations.size()}, {"files", attestations}};
  j["interrupted"] = s.interrupted;
  j["jobs"] = s.jobs;
  j["wall_ms"] = s.wall_ms;
  j["patch_formats"] = s.patch_formats;
  j["diff_stats"] = {{"added", s.added}, {"removed", s.removed}};
  const ResourceTotals& t = s.resources;
  nlohmann::json outages = nlohmann::json::array();
  for (const auto& o : s.engine_outages) outages.push_back(outage_log_json(o));
  j["engine_outages"] = outages;
  j["resources"] = {{"measured", t.measured},          {"unavailable", t.unavailable},
                    {"cpu_ms", t.cpu_ms},              {"memory_peak_bytes_max", t.memory_peak_bytes},
                    {"pids_peak_max", t.pids_peak},    {"tmpfs_peak_bytes_max", t.tmpfs_peak_bytes}};
  return j;
}

std::string summary_table(const EvalSummary& s, std::size_t max_ids) {
  // The rows first: the name column is as wide as its widest name (e.g.
  // isolation_violation), so that the counts line up.
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const std::string& name, const std::vector<std::string>& ids) { rows.emplace_back(name, ids); };
  for (Category c : kAllCategories) row(category_name(c), s.ids(c));
  if (!s.skipped.empty()) row("(skipped)", s.skipped);
  if (!s.not_run.empty()) row("(not run)", s.not_run);
  for (const auto& [part, ids] : s.changed) row("(changed: " + part + ")", ids);
  if (!s.suspicious.empty()) {
    std::vector<std::string> marked;
    for (const auto& id : s.suspicious) {
      const bool passed = std::find(s.suspicious_passed.begin(), s.suspicious_passed.end(), id) !=
                          s.suspicious_passed.end();
      marked.push_back(passed ? id + " (passed)" : id);
    }
    row("(suspicious)", marked);
  }
  std::size_t width = 12;
  for (const auto& r : rows) width = std::max(width, r.first.size() + 1);
  std::ostringstream o;
  o << "category" << std::string(width - 8, ' ') << " count  tasks\n";
  for (const auto& [name, ids] : rows) {
    const std::string count = std::to_string(ids.size());
    o << name << std::string(width - name.size(), ' ') << std::string(count.size() < 6 ? 6 - count.size() : 0, ' ')
      << count << (ids.empty() ? "" : "  ");
    for (std::size_t i = 0; i < ids.size() && i < max_ids; ++i) o << (i ? ", " : "") << escape_for_terminal(ids[i]);
    if (ids.size() > max_ids) o << ", +" << ids.size() - max_ids << " more";
    o << "\n";
  }
  for (const auto& out : s.engine_outages) {
    o << "engine unreachable since " << clock_time(out.began) << " for " << out.ms << " ms: "
      << (out.gave_up ? "gave up (eval.engine_wait_seconds), the tasks not run are not_run" : "waited out") << "\n";
  }
  o << "total " << s.total << " task(s), " << s.jobs << " job(s), " << s.wall_ms << " ms"
    << (s.interrupted ? ", interrupted" : "") << "\n";
  if (!s.patch_formats.empty()) {
    o << "patches:";
    for (const auto& [format, n] : s.patch_formats) o << " " << n << " " << format;
    o << "; proven changes add " << s.added << " and remove " << s.removed << " line(s)\n";
  }
  if (s.resources.measured > 0) {
    o << "resources (" << s.resources.measured << " measured run(s)): cpu " << s.resources.cpu_ms
      << " ms in all, memory peak " << s.resources.memory_peak_bytes / (1024 * 1024) << " MiB, pids peak "
      << s.resources.pids_peak << "\n";
  }
  return o.str();
}

int eval_exit_code(const EvalSummary& s) {
  if (!s.ids(Category::kInfraError).empty() || !s.ids(Category::kIsolationViolation).empty() ||
      !s.not_run.empty()) {
    return 5;
  }
  return 0;
}

}  // namespace lazyagent
