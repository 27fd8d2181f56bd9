// Resuming an eval: a stored result stands only while everything that
// decided it is unchanged.
//
// Each result file (eval_runner.h) records the task's resume key: four
// parts, each a hash of one kind of input.
//   seed    the seed snapshot's sha256 (its content: paths, modes, bytes)
//   patch   sha256 of the patch text (or, for an instruction task, of the
//           instruction)
//   config  sha256 of the effective settings that decide a verdict: the test
//           command, the allowlist, the patch limits, the sandbox policy
//           (image name, limits, tmpfs sizes, timeout, user namespace,
//           seccomp profile hash, runtime), the baseline choice, --rerun,
//           the backend (and its namespace and RuntimeClass), the planner's
//           settings for an instruction task, and lazyagent-oci's version
//   image   the sandbox image's digest as podman reports it (a rebuilt image
//           under the same tag is a new digest); on Kubernetes, where the
//           nodes pull the image, its reference
// A rerun with the same --out skips a task only when its stored key equals
// the current one part by part; otherwise the task runs again and the
// summary names the parts that changed (`changed: seed`, `changed: config`,
// ...). A result written without a key (an older lazyagent-oci) counts as
// `changed: key`. Pure: documents in, differences out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"

namespace lazyagent {

struct ResumeKey {
  std::string seed;
  std::string patch;
  std::string config;
  std::string image;
};

// The parts, in the order they are compared and reported.
inline constexpr const char* kResumeParts[] = {"seed", "patch", "config", "image"};

nlohmann::json resume_key_to_json(const ResumeKey& k);

// The parts of `current` that differ from `stored` (a result file's
// eval.key), in kResumeParts order; {"key"} when `stored` holds no key.
std::vector<std::string> changed_parts(const nlohmann::json& stored, const ResumeKey& current);

// What, besides the seed, the patch and the image, decides a task's verdict.
struct DecisiveSettings {
  Config config;                 // the task's effective config (task_config)
  std::int64_t timeout_seconds = 120;
  bool baseline = true;
  int reruns = 0;
  bool instruction = false;      // the planner runs: its settings count too
  std::string backend = "podman";
  // Where the engine runs sandboxes beyond the config (EnginePlacement::
  // settings: Kubernetes' namespace and runtime class), under the backend's
  // name; null = nothing.
  nlohmann::json placement;
};

// The settings as a canonical document (its sha256 is ResumeKey::config).
nlohmann::json decisive_settings_json(const DecisiveSettings& s);
std::string decisive_settings_sha256(const DecisiveSettings& s);

// sha256 of what a task asks: the patch text, or "instruction:" + the
// instruction.
std::string task_input_sha256(const std::string& patch_json, const std::string& instruction);

}  // namespace lazyagent
