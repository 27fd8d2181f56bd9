// `reap` on Kubernetes: the objects of runs whose owner is gone, then the
// run store's sweep (store_sweep.h), as on podman; and what is left of a run
// (a record's pod, an interrupted process's objects).
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
#include "engine/k8s/k8s_seed_image.h"
#include "store/ownership.h"
#include "policy/planner_egress.h"
#include "policy/planner_policy.h"
#include "store/store_sweep.h"
#include "policy/sandbox_policy.h"


namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

Result<ReapReport> K8sEngine::reap(bool all) {
  auto report = reap_k8s(*k8s_, s_.ns, all);
  // The seed images of dead runs (k8s.registry), deleted by digest.
  if (report && !s_.registry.empty()) {
    auto reg = registry();
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
    auto gone = reg ? reap_seed_images(**reg, all, &report->left_running, s_.registry_ttl_seconds, now)
                    : Result<std::vector<std::string>>(reg.error());
    if (!gone) report->errors.push_back(gone.error().message);
    else for (auto& g : *gone) report->removed.push_back(s_.registry + "/" + g);
  }
  // The run store's leftovers (temp files of dead writers, records of runs
  // killed while they ran): swept as on podman (store_sweep.h).
  if (report && store_) sweep_store(*store_, &*report);
  return report;
}

Result<bool> K8sEngine::sandbox_exists(const std::string& id) {
  const auto slash = id.find('/');
  if (slash == std::string::npos) return false;  // not a pod this engine named
  auto pod = k8s_->get(kK8sPods, id.substr(0, slash), id.substr(slash + 1));
  if (!pod) return pod.error();
  return pod->has_value();
}

Result<std::vector<std::string>> K8sEngine::left_by_process(int pid) {
  const auto owner = k8s_owner_labels("sandbox", "");
  const std::string sel = std::string(kLabelPid) + "=" + std::to_string(pid) + "," + kLabelOwner + "=" +
                          owner.at(kLabelOwner);
  std::vector<std::string> left;
  for (const K8sKind* kind : {&kK8sJobs, &kK8sConfigMaps, &kK8sNetworkPolicies}) {
    auto l = k8s_->list(*kind, s_.ns, sel);
    if (!l) return l.error();
    for (const auto& item : l->value("items", json::array())) {
      left.push_back(std::string(kind->name) + " " + s_.ns + "/" + item.value("/metadata/name"_json_pointer, std::string()));
    }
  }
  return left;
}

Result<ReapReport> reap_k8s(K8sClient& k8s, const std::string& ns, bool all) {
  ReapReport report;
  std::map<std::string, bool> run_dead;  // run id -> owner gone
  for (const K8sKind* kind : {&kK8sJobs, &kK8sPods, &kK8sConfigMaps, &kK8sNetworkPolicies}) {
    auto l = k8s.list(*kind, ns, kLabelRun);
    if (!l) return l.error().context("reaping");
    for (const auto& item : l->value("items", json::array())) {
      const json labels = item.value("/metadata/labels"_json_pointer, json::object());
      const auto owner = owner_labels_from_k8s(labels);
      const std::string run = labels.value(kLabelRun, "");
      if (run.empty()) continue;
      const bool dead = all || !owner_alive(owner);
      auto [it, fresh] = run_dead.emplace(run, dead);
      if (!fresh) it->second = it->second && dead;  // any live object keeps the run
    }
  }
  for (const auto& [run, dead] : run_dead) {
    if (!dead) {
      report.left_running.push_back(ns + "/" + run);
      continue;
    }
    const std::string sel = k8s_run_selector(run);
    Status st = k8s.remove_all(kK8sJobs, ns, sel);
    if (st) st = k8s.remove_all(kK8sPods, ns, sel, 0);
    if (st) st = k8s.remove_all(kK8sConfigMaps, ns, sel);
    if (st) st = k8s.remove_all(kK8sNetworkPolicies, ns, sel);
    if (st) report.removed.push_back(ns + "/" + run + " (Jobs, pods, ConfigMaps, NetworkPolicies)");
    else report.errors.push_back(st.error().message);
  }
  return report;
}

}  // namespace lazyagent
