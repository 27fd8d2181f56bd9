// The Kubernetes export: the same two-container policy as Job manifests.
// Pure: values in, files out (export_common.h).
//
// What it writes, for ExportInput.name N in namespace ExportInput.k8s_namespace:
//   10-seed-configmap.yaml      ConfigMap N-seed: the seed with the patch
//                               applied, one key per file (export_k8s_configmap.h)
//   20-task-configmap.yaml      ConfigMap N-task: the planner's task.json
//   30-sandbox-networkpolicy.yaml  NetworkPolicy N-sandbox-deny-all: selects
//                               the sandbox pods by label, denies all ingress
//                               and egress (no rules)
//   40-planner-job.yaml         Job N-planner: `lazyagent-oci plan`; the
//                               provider settings come from the user's Secret
//                               N-provider (keys base_url, model, api_key),
//                               referenced by name and mounted as files under
//                               /run/secrets; no value is ever in a manifest
//   50-sandbox-job.yaml         Job N-sandbox: sandbox_command() on /seed, with
//                               no secret of any kind, no service-account token,
//                               Pod Security "restricted" plus a read-only root,
//                               memory-backed emptyDirs for /work and /tmp,
//                               cpu/memory limits, the timeout as
//                               activeDeadlineSeconds, no retries
//   README.txt                  how to apply, read the result, clean up
// The numeric prefixes order `kubectl apply -f DIR`: the NetworkPolicy exists
// before the sandbox pod does.
//
// A Pod spec cannot say everything the podman sandbox enforces (pids, rlimits,
// a network namespace without interfaces, tmpfs mount options); those gaps are
// listed in ExportBundle.not_enforced, never papered over. The manifests use
// only fields of the Kubernetes 1.20 API (checked against a real 1.20
// kube-apiserver by tests/integration/export_k8s_test.cpp, see docs/k8s.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/export_common.h"
#include "util/result.h"

namespace lazyagent {

// Names and ids inside the pods.
inline constexpr std::int64_t kK8sSandboxUid = 1000;    // user `sandbox` of the sandbox image
inline constexpr std::int64_t kK8sPlannerUid = 65534;   // `nobody`: the planner image has no user
inline constexpr std::int64_t kK8sTtlSecondsAfterFinished = 3600;  // time to read logs
inline constexpr const char* kK8sSecretSuffix = "-provider";

// Errors: kUsage for a name or namespace Kubernetes would refuse, a seed a
// ConfigMap cannot carry (symlinks, over 1 MiB) or a value YAML cannot carry;
// kPatch for a patch that does not fit the seed.
Result<ExportBundle> export_k8s(const ExportInput& input);

// The same documents as objects, for a backend that creates them through the
// API itself (k8s_engine.h) instead of writing files: one policy, one builder.
struct K8sDocuments {
  nlohmann::ordered_json seed_configmap, task_configmap, network_policy, planner_job, sandbox_job;
  std::vector<std::string> empty_dirs;    // seed directories a ConfigMap cannot carry
  std::vector<std::string> enforced;      // ExportBundle's lines, same wording
  std::vector<std::string> not_enforced;
};
Result<K8sDocuments> k8s_documents(const ExportInput& input);

}  // namespace lazyagent
