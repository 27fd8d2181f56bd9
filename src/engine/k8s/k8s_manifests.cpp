// The Kubernetes objects of one run as this engine sends them: the
// exported documents (export_k8s.h) with the owner labels, the run selector,
// and the planner's egress NetworkPolicy.
#include "engine/k8s/k8s_engine.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "util/base64.h"
#include "policy/isolation_probe.h"
#include "store/ownership.h"
#include "policy/planner_egress.h"
#include "policy/planner_policy.h"
#include "store/store_sweep.h"
#include "policy/sandbox_policy.h"


namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string label_safe(std::string v) {
  for (char& c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  if (v.size() > 63) v.resize(63);
  while (!v.empty() && !std::isalnum(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

}  // namespace

std::string k8s_run_selector(const std::string& run_id) { return std::string(kLabelRun) + "=" + run_id; }

std::map<std::string, std::string> k8s_owner_labels(const std::string& role, const std::string& run_id) {
  auto labels = owner_labels(current_owner(), role, run_id);
  std::string& owner = labels[kLabelOwner];
  const auto at = owner.find('@');
  if (at != std::string::npos) owner[at] = '.';  // uid is digits: the first '.' splits it back
  for (auto& [k, v] : labels) v = label_safe(v);
  return labels;
}

std::map<std::string, std::string> owner_labels_from_k8s(const json& labels) {
  std::map<std::string, std::string> out;
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  if (auto it = out.find(kLabelOwner); it != out.end()) {
    const auto dot = it->second.find('.');
    if (dot != std::string::npos) it->second[dot] = '@';
  }
  return out;
}

void adapt_documents(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id) {
  auto label = [&](ordered_json& meta, const char* role) {
    for (const auto& [k, v] : k8s_owner_labels(role, run_id)) meta["labels"][k] = v;
  };
  label(d.seed_configmap["metadata"], "sandbox");
  label(d.task_configmap["metadata"], "planner");
  label(d.network_policy["metadata"], "sandbox");
  for (auto* job : {&d.planner_job, &d.sandbox_job}) {
    const char* role = job == &d.planner_job ? "planner" : "sandbox";
    label((*job)["metadata"], role);
    label((*job)["spec"]["template"]["metadata"], role);
    (*job)["spec"]["ttlSecondsAfterFinished"] = s.ttl_seconds_after_finished;
  }
  // The run deletes its objects itself, right away; the export's TTL stays
  // as a backstop for a run killed with SIGKILL (and `reap`).
  ordered_json& planner = d.planner_job["spec"]["template"]["spec"];
  for (auto& v : planner["volumes"]) {
    if (v.contains("secret")) v["secret"]["secretName"] = s.secret;
  }
  if (!s.plain_http_provider_ip.empty()) {
    planner["hostAliases"] = ordered_json::array(
        {{{"ip", s.plain_http_provider_ip}, {"hostnames", {"host.containers.internal"}}}});
  }
  if (!s.runtime_class.empty()) d.sandbox_job["spec"]["template"]["spec"]["runtimeClassName"] = s.runtime_class;
}

ordered_json add_planner_egress(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id,
                                const std::string& probe_targets) {
  if (s.planner_egress.empty()) return nullptr;
  ordered_json& pod = d.planner_job["spec"]["template"]["spec"];
  ordered_json& planner = pod["containers"][0];
  const ordered_json mount = {{"name", "egress"}, {"mountPath", kPlannerEgressDir}};
  ordered_json probe = {
      {"name", "egress-probe"},
      {"image", d.sandbox_job["spec"]["template"]["spec"]["containers"][0]["image"]},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {"/bin/sh", "-c", planner_egress_probe_script(), "sh", probe_targets}},
      {"workingDir", "/"},
      {"securityContext", planner["securityContext"]},
      {"resources", planner["resources"]},
      {"volumeMounts", ordered_json::array({mount})},
  };
  planner["volumeMounts"].push_back({{"name", "egress"}, {"mountPath", kPlannerEgressDir}, {"readOnly", true}});
  std::string allow;
  for (const auto& a : s.planner_egress) allow += (allow.empty() ? "" : " ") + a;
  for (const std::string a : {"--egress-report", kPlannerEgressFile, "--egress-allow"}) planner["args"].push_back(a);
  planner["args"].push_back(allow);
  if (s.planner_egress_required) planner["args"].push_back("--egress-required");
  // Last: a new key of an ordered_json moves its members (`planner` is one).
  pod["volumes"].push_back({{"name", "egress"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Mi"}}}});
  pod["initContainers"].push_back(probe);  // after the snapshot's copier, if any
  ordered_json np = {{"apiVersion", "networking.k8s.io/v1"},
                     {"kind", "NetworkPolicy"},
                     {"metadata", {{"name", run_id + "-planner-egress"}, {"namespace", s.ns}}},
                     {"spec",
                      {{"podSelector", {{"matchLabels", d.planner_job["spec"]["template"]["metadata"]["labels"]}}},
                       {"policyTypes", {"Ingress", "Egress"}},
                       {"egress", planner_egress_rules(s.planner_egress)}}}};
  for (const auto& [k, v] : k8s_owner_labels("planner", run_id)) np["metadata"]["labels"][k] = v;
  return np;
}

}  // namespace lazyagent
