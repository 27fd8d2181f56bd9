// What every export (OCI bundle, podman-compose, Kubernetes) starts from.
//
// One pure description of the policy — the SandboxPolicy the podman sandbox
// enforces and the PlannerRequest the planner container gets — is turned into
// each target's documents by pure functions (export_oci, export_compose,
// export_k8s). Each target also says what it cannot enforce, so a user never
// mistakes a weaker policy for the same one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "contract/patch_contract.h"
#include "policy/planner_policy.h"
#include "contract/planner_task.h"
#include "policy/sandbox_policy.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

struct ExportInput {
  Config config;                 // effective config (CLI flags applied)
  SandboxPolicy policy;          // policy_from_config(config, timeout)
  PlannerRequest planner;        // planner_request_from_config(config)
  SeedSnapshot seed;             // the seed, read once
  std::optional<Patch> patch;    // validated against the contract; absent = seed only
  // A patch in either form (patch_format.h) as `test` records it: its
  // patch_sha256 and the paths it changes. "" = none, or `patch`'s.
  std::string patch_sha256;
  std::vector<std::string> changed_paths;
  // The resolved change (change_set.h copy_writes) instead of `patch`: what
  // the pipeline gives an engine, whatever form the patch came in.
  std::optional<std::vector<FileWrite>> writes;
  std::string name = "lazyagent";        // base name of the resources
  std::string k8s_namespace = "default"; // Kubernetes only
  std::string instruction;               // the planner's instruction ("" = default)
  std::optional<PlannerTask> task;       // the planner's task as built by the caller (the
                                         // k8s backend: with the repair loop's feedback); absent =
                                         // build_task(seed, config, instruction, name)
  // Kubernetes only: the run's private copy as a seed image in a registry,
  // "ADDRESS/REPO@sha256:..." (k8s_seed_image.h), pulled by an init container
  // into an emptyDir of `k8s_seed_image_bytes` (what the copy takes on disk,
  // SeedImage::disk_bytes; plus slack) that the sandbox
  // mounts read-only at /seed; no seed ConfigMap then. "" = the ConfigMap.
  std::string k8s_seed_image;
  std::int64_t k8s_seed_image_bytes = 0;
  // Kubernetes only: the planner's snapshot (contract/planner_snapshot.h) as
  // a seed image, pulled the same way into an emptyDir the planner mounts
  // read-only at /seed (`plan --snapshot /seed`: its tool loop). "" = none:
  // the planner has no snapshot and asks with the one-shot prompt.
  std::string k8s_planner_snapshot_image;
  std::int64_t k8s_planner_snapshot_bytes = 0;

  bool patched() const { return patch.has_value() || !patch_sha256.empty(); }
  // The patch's identity: as `test` records it ("" = no patch).
  std::string patch_id() const {
    if (!patch_sha256.empty()) return patch_sha256;
    return patch ? lazyagent::patch_sha256(*patch) : "";
  }
};

struct ExportedFile {
  std::string path;     // relative to the output directory
  std::string content;
  unsigned mode = 0644;
};

// A size for people: "64 MiB", or "1000 bytes" when not whole MiB.
inline std::string size_text(std::int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

struct ExportBundle {
  std::vector<ExportedFile> files;
  std::vector<std::string> enforced;      // one line each: what the target enforces, and how
  std::vector<std::string> not_enforced;  // one line each: what it cannot, and why
  std::string how_to_run;                 // shell lines for the user
};

}  // namespace lazyagent
