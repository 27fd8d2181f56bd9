// `run --backend k8s`: the planner/sandbox flow of agent_run.h on a
// Kubernetes cluster, with the same contract, verdict rules and cleanup.
//
//   engine    API version, namespace, the provider Secret (by name; its
//             values are never read except base_url's scheme), reap
//             leftovers of dead runs (label io.lazyagent.run + owner labels)
//   plan      ConfigMap <run>-task + Job <run>-planner (export_k8s.h's
//             documents: the Secret mounted as files, nothing else secret);
//             watch its pod to termination with a deadline; its log carries
//             the patch (the one line starting with '{') and the planner's
//             own lines
//   validate  the patch again with the same contract (patch_contract.h)
//   sandbox   ConfigMap <run>-seed (seed + patch), the deny-all
//             NetworkPolicy and Job <run>-sandbox, all from the same
//             k8s_documents() as `export k8s`, plus runtimeClassName; watch
//             its pod; exit code from the pod status, bounded log
//   probe     the isolation probe's block from the log (isolation_probe.h):
//             any interface but lo voids the verdict
//   verdict   verdict.h, as on podman
// Every Job, pod, ConfigMap and NetworkPolicy of the run carries
// io.lazyagent.run=<run id> plus owner labels and is deleted on every path
// (a scope guard; SIGINT ends the watch, the guard's deletes are not
// interruptible). `reap --backend k8s` removes what a killed run left.
//
// Network isolation does not rest on NetworkPolicy: the sandbox pod asks for
// the RuntimeClass of k8s.runtime_class (scripts/k8s-cluster.sh installs
// `lazyagent-nonet`: gVisor runsc with --network=none under the runc shim,
// so the pod has only its own loopback whatever the CNI does), and the probe
// inside the pod proves it for every run.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config.h"
#include "export_k8s.h"
#include "k8s_client.h"
#include "reaper.h"
#include "result.h"
#include "run_store.h"
#include "sandbox_run.h"

namespace lazyagent {

struct K8sRunSettings {
  std::string ns = "default";
  std::string secret = "lazyagent-provider";
  std::string runtime_class = "lazyagent-nonet";  // "" = the cluster's default runtime
  std::string plain_http_provider_ip;             // opt-in, see Config::k8s
  long startup_slack_seconds = 120;               // scheduling + container start, on top of the timeouts
};

K8sRunSettings k8s_settings_from_config(const Config& config);

struct K8sRunRequest {
  Config config;
  std::string instruction;
  // A patch given up front (`eval`'s patch tasks): no planner Job, no
  // provider Secret needed; the patch is validated with the same contract.
  std::optional<std::string> patch_json;
  std::int64_t timeout_seconds = 120;
  K8sRunSettings k8s;
};

// Kubernetes label values allow [A-Za-z0-9._-] only: the owner labels of
// ownership.h in that alphabet ("0@host" -> "0.host"), and back.
std::map<std::string, std::string> k8s_owner_labels(const std::string& role, const std::string& run_id);
std::map<std::string, std::string> owner_labels_from_k8s(const nlohmann::json& labels);

// Pure: the export's documents made ready for this run: the owner labels on
// every object and pod template, the provider Secret's name, the sandbox's
// RuntimeClass, and for the planner a hostAlias host.containers.internal ->
// plain_http_provider_ip when that opt-in is set.
void adapt_documents(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id);

// Splits a planner pod's log (stdout and stderr by line) into the patch
// (the last line starting with '{') and the planner's own lines.
void split_planner_log(const std::string& log, std::string* patch, std::string* planner_lines);

// What a pod's status says about its one container.
struct PodEnd {
  bool terminated = false;
  int exit_code = -1;
  std::string reason;        // "Completed", "Error", "OOMKilled", ...
  std::string stuck;         // a waiting reason that will not resolve (ErrImageNeverPull, ...)
};
PodEnd pod_end(const nlohmann::json& pod);

Result<TestResult> run_agent_k8s(const K8sRunRequest& req, K8sClient& k8s, const RunStore& store,
                                 const ProgressFn& progress);

// Jobs, pods, ConfigMaps and NetworkPolicies carrying io.lazyagent.run in
// `ns` whose owner is gone (all: every one).
Result<ReapReport> reap_k8s(K8sClient& k8s, const std::string& ns, bool all);

}  // namespace lazyagent
