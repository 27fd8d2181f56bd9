// `reap` on Kubernetes: the objects of runs whose owner is gone, then the
// run store's sweep (store_sweep.h), as on podman.
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

Result<ReapReport> K8sEngine::reap(bool all) {
  auto report = reap_k8s(*k8s_, s_.ns, all);
  // The run store's leftovers (temp files of dead writers, records of runs
  // killed while they ran): swept as on podman (store_sweep.h).
  if (report && store_) sweep_store(*store_, &*report);
  return report;
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
