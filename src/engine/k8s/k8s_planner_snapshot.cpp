// The planner's tool loop on Kubernetes: the snapshot its tools read
// (contract/planner_snapshot.h, the podman engine's reader and bounds) goes
// to the planner pod as a seed image (k8s_seed_image.h) through k8s.registry,
// pulled by digest by an init container into an emptyDir the planner mounts
// read-only at /seed (export_k8s.h). Without a registry there is no way to
// give the pod a snapshot of real size (a ConfigMap holds 1 MiB): the
// planner asks with the one-shot prompt, and the task record says why.
#include "contract/planner_snapshot.h"
#include "engine/k8s/k8s_engine.h"
#include "policy/sandbox_policy.h"

namespace lazyagent {

using nlohmann::json;

Result<std::optional<K8sPushedSeed>> K8sEngine::planner_snapshot_image(const PlannerSpec& spec, json* why_none) {
  if (!spec.task->loop.tools || spec.seed == nullptr) return std::optional<K8sPushedSeed>();
  if (s_.registry.empty()) {
    *why_none = {{"transport", "none"},
                 {"tool_loop", false},
                 {"reason", "planner.tools is on but k8s.registry is not set: the planner pod gets no snapshot of the "
                            "seed for its tools, so it asks with the one-shot prompt (set k8s.registry to run the "
                            "tool loop on Kubernetes)"}};
    return std::optional<K8sPushedSeed>();
  }
  std::vector<std::string> left_out, empty_dirs;
  std::vector<K8sFile> files;
  for (auto& e : planner_snapshot(*spec.seed, "", kMaxSnapshotFileBytes, kMaxSnapshotBytes, &left_out)) {
    if (e.directory) {
      empty_dirs.push_back(std::move(e.path));  // every directory: the image writes each once
    } else {
      files.push_back({std::move(e.path), std::move(e.content), e.mode});
    }
  }
  auto pushed = push_seed(std::move(files), empty_dirs, "planner", spec.run_id, spec.run_id + "-planner");
  if (!pushed) return pushed.error().context("the planner's snapshot");
  pushed->extras.seed["tool_loop"] = true;
  pushed->extras.seed["mount"] = kSeedMount;
  pushed->extras.seed["left_out"] = left_out.size();
  return std::optional<K8sPushedSeed>(std::move(*pushed));
}

}  // namespace lazyagent
