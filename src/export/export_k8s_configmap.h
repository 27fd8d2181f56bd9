// Files carried in a Kubernetes ConfigMap, byte for byte. Pure; part of the
// Kubernetes export (export_k8s.h); the manifests' YAML is yaml_text.h's.
//
// A ConfigMap key may not contain '/', so file i gets the key "f0000",
// "f0001", ... and the volume that mounts the ConfigMap lists
// `items: [{key, path, mode}]`: the kubelet writes each key's bytes at its
// relative path, creating the directories in between. Text goes to `data`;
// a file that is not valid UTF-8, or holds a character YAML cannot carry as
// it is (NUL and other C0 controls except tab/LF/CR, DEL, C1 controls, BOM,
// U+2028/2029, noncharacters), goes to `binaryData` as base64. So every
// file reaches /seed unchanged (yaml_safe_text decides, base64.h encodes).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/patch_contract.h"
#include "util/result.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

// The API server refuses a ConfigMap whose data + binaryData values exceed
// 1 MiB in total (core.MaxSecretSize, counted on the decoded bytes).
inline constexpr std::size_t kConfigMapMaxBytes = 1024 * 1024;

struct K8sFile {
  std::string path;  // relative, '/'-separated
  std::string content;
  unsigned mode = 0644;
};

// The files the sandbox sees at /seed: the seed's regular files with the
// patch applied, the way write_seed_copy() writes the podman sandbox's
// private copy (a patched file keeps 0755 if it was executable, else 0644;
// new files are 0644). Sorted by path. Errors (kUsage): a symlink in the seed
// (a ConfigMap cannot carry one), a path the kubelet refuses as an item path
// (one starting with ".."); kPatch: the patch writes through a symlink or
// over a directory of the seed. `empty_dirs` receives directories holding no
// file, which a ConfigMap cannot carry.
Result<std::vector<K8sFile>> seed_files(const SeedSnapshot& seed, const std::optional<Patch>& patch,
                                        std::vector<std::string>* empty_dirs = nullptr);

// The same from a resolved change (change_set.h copy_writes: files written
// with their modes, files deleted), as write_seed_copy() writes the podman
// copy. A streamed snapshot's files are read from disk, each checked against
// its hash (read_seed_file).
Result<std::vector<K8sFile>> seed_files(const SeedSnapshot& seed, const std::vector<FileWrite>& writes,
                                        std::vector<std::string>* empty_dirs = nullptr);

struct FileConfigMap {
  nlohmann::ordered_json manifest;  // the ConfigMap object
  nlohmann::ordered_json items;     // for the volume: [{key, path[, mode]}]
  std::size_t bytes = 0;            // what counts toward kConfigMapMaxBytes
  std::size_t binary_files = 0;     // how many went to binaryData
};

// Mode the volume gives a file whose item names no mode of its own.
inline constexpr unsigned kConfigMapDefaultMode = 0644;

// `metadata` is the object's metadata (name, namespace, labels). kUsage
// error when the files exceed kConfigMapMaxBytes.
Result<FileConfigMap> files_configmap(const nlohmann::ordered_json& metadata,
                                      const std::vector<K8sFile>& files);

}  // namespace lazyagent
