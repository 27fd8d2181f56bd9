#include "eval/swebench_report.h"

#include "contract/unified_diff.h"
#include "pipeline/run_result.h"

namespace lazyagent {

using nlohmann::json;

namespace {

json string_list(const json& triage, const char* key) {
  json out = json::array();
  if (!triage.is_object() || !triage.contains(key) || !triage[key].is_array()) return out;
  for (const auto& v : triage[key]) {
    if (v.is_string()) out.push_back(v);
  }
  return out;
}

json outcome(json success, json failure) { return {{"success", std::move(success)}, {"failure", std::move(failure)}}; }

bool refused_as_empty(const json& r) {
  if (!r.is_object() || r.value("status", "") != "refused" || !r.contains("findings") || !r["findings"].is_array()) return false;
  for (const auto& f : r["findings"]) {
    if (f.is_object() && f.value("code", "") == diff_reason::kEmptyDiff) return true;
  }
  return false;
}

std::string category_in(const json& r) {
  if (!r.is_object() || !r.contains("eval") || !r["eval"].is_object()) return "";
  return r["eval"].value("category", "");
}

json instance_report(const json& r) {
  const std::string category = category_in(r);
  const bool empty = refused_as_empty(r);
  const json triage = r.is_object() && r.contains("triage") ? r["triage"] : json();
  json inst = {
      {"patch_is_None", false},
      {"patch_exists", !empty},
      // A patch the contract refused (it did not apply, or broke a rule) never ran.
      {"patch_successfully_applied", r.is_object() && r.contains("status") && r.value("status", "") != "refused"},
      {"resolved", category == "passed"},
      {"category", category.empty() ? "no_result" : category},
      {"triage_available", triage.is_object() && triage.value("available", false)},
  };
  if (r.is_object() && r.contains("reason")) inst["reason"] = r["reason"];
  if (r.is_object() && r.contains("error")) inst["error"] = r["error"];
  inst["tests_status"] = {
      {"FAIL_TO_PASS", outcome(string_list(triage, "fixed"), string_list(triage, "still_failing"))},
      {"PASS_TO_PASS", outcome(string_list(triage, "passing"), string_list(triage, "newly_broken"))},
      {"FAIL_TO_FAIL", outcome(json::array(), json::array())},
      {"PASS_TO_FAIL", outcome(json::array(), json::array())},
  };
  // The signed verdict's envelope (--sign-key; docs/signing.md), when there is one.
  if (r.is_object() && r.contains("attestation") && r["attestation"].is_object()) {
    inst["attestation"] = r["attestation"].value("path", "");
  }
  inst["flaky"] = string_list(triage, "flaky");
  inst["added"] = string_list(triage, "added");
  return inst;
}

}  // namespace

json swebench_report(const std::vector<std::string>& task_ids, const std::map<std::string, json>& results) {
  json instances = json::object();
  json completed = json::array(), resolved = json::array(), unresolved = json::array(), empty = json::array(),
       errors = json::array(), incomplete = json::array(), isolation = json::array();
  json attestations = json::object();
  for (const auto& id : task_ids) {
    const auto it = results.find(id);
    const json r = it == results.end() ? json() : it->second;
    json inst = instance_report(r);
    Category category = Category::kNone;
    const bool known = category_from_name(inst["category"].get<std::string>(), &category);
    if (it == results.end()) {
      incomplete.push_back(id);
      errors.push_back(id);
    } else if (!known || category == Category::kInfraError || category == Category::kIsolationViolation) {
      // No verdict on the patch: the engine failed, or broke the policy (a
      // finding listed on its own too), or the file holds no category.
      errors.push_back(id);
      if (category == Category::kIsolationViolation) isolation.push_back(id);
    } else {
      completed.push_back(id);
      (inst["resolved"].get<bool>() ? resolved : unresolved).push_back(id);
    }
    if (!inst["patch_exists"].get<bool>()) empty.push_back(id);
    if (inst.contains("attestation")) attestations[id] = inst["attestation"];
    instances[id] = std::move(inst);
  }
  return {
      {"schema_version", 2},
      {"total_instances", task_ids.size()},
      {"submitted_instances", task_ids.size()},
      {"completed_instances", completed.size()},
      {"resolved_instances", resolved.size()},
      {"unresolved_instances", unresolved.size()},
      {"empty_patch_instances", empty.size()},
      {"error_instances", errors.size()},
      {"isolation_violation_instances", isolation.size()},
      {"submitted_ids", task_ids},
      {"completed_ids", completed},
      {"incomplete_ids", incomplete},
      {"resolved_ids", resolved},
      {"unresolved_ids", unresolved},
      {"empty_patch_ids", empty},
      {"error_ids", errors},
      {"isolation_violation_ids", isolation},
      {"attestation_files", attestations},
      {"instances", instances},
  };
}

}  // namespace lazyagent
