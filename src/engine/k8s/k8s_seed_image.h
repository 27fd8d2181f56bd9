// The run's private copy of the seed as an OCI image in a registry, pulled
// by the sandbox pod by digest (k8s.registry; without it the ConfigMap
// carries the seed, at most 1 MiB: export_k8s_configmap.h).
//
// The image has two uncompressed layers and nothing else:
//   1. the copier: a static busybox (Debian's busybox-static, /bin/busybox on
//      the host running the CLI) at /bin/busybox; the same bytes every run,
//      so the same blob, uploaded once per registry;
//   2. the seed: the files the sandbox sees (seed_files(): seed + change),
//      under /seed/, written reproducibly (uid 0, mtime 0, sorted), so the
//      same private copy is the same digest.
// The sandbox Job runs it as an init container (`busybox cp -R /seed/. /out/`
// into an emptyDir the sandbox container mounts read-only at /seed): no host
// path, no volume the pod could write back through. The manifest is tagged
// with the run id and carries the run's owner labels as annotations (reap);
// it is pushed, then verified (the manifest by digest hashes to its digest
// and names exactly these layers, each layer's bytes hash to its digest)
// before the Job starts, and deleted by digest with the run's objects.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/k8s/oci_registry.h"
#include "export/export_k8s_configmap.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kSeedImageRepo = "lazyagent-seed";
inline constexpr const char* kSeedCopier = "/bin/busybox";  // busybox-static
inline constexpr const char* kOciManifestType = "application/vnd.oci.image.manifest.v1+json";
// A seed's size and file count the registry path takes (issue 32: real
// repositories, SWE-bench style).
inline constexpr std::uint64_t kSeedImageMaxBytes = 100ull << 20;
inline constexpr std::size_t kSeedImageMaxFiles = 20000;

struct SeedImage {
  std::string address, repo, tag;
  std::string digest;           // the manifest's: what the pod pulls
  std::string config_digest, copier_digest, layer_digest;
  std::uint64_t copier_bytes = 0, layer_bytes = 0, seed_bytes = 0;
  // What the copy takes on the node's disk as `du` (the kubelet's emptyDir
  // measure) counts it: each file and directory rounded up to whole 4 KiB
  // blocks. Many small files take far more than their bytes (10,000 files of
  // 5,243 bytes: 52 MB of data, 82 MB on disk).
  std::uint64_t disk_bytes = 0;
  std::size_t files = 0;
  std::string reference() const { return address + "/" + repo + "@" + digest; }
};

// The image's blobs, built in memory (pure but for reading the copier).
struct SeedImageBlobs {
  std::string copier_layer, seed_layer, config, manifest;
  SeedImage image;  // digests and sizes; no address
};
Result<SeedImageBlobs> build_seed_image(const std::vector<K8sFile>& files, const std::vector<std::string>& empty_dirs,
                                        const std::map<std::string, std::string>& annotations,
                                        const std::string& copier_path = kSeedCopier);

// Uploads the blobs (those the registry lacks) and the manifest tagged `tag`.
Result<SeedImage> push_seed_image(RegistryClient& reg, const SeedImageBlobs& blobs, const std::string& tag);

// The registry serves exactly what was pushed, by digest: the manifest's
// bytes hash to image.digest and name the config and the two layers, and
// each blob's bytes hash to its digest. Any difference refuses the run.
Status verify_seed_image(RegistryClient& reg, const SeedImage& image);

// The manifest annotation with the push time (unix seconds), for the TTL.
inline constexpr const char* kAnnotationPushed = "io.lazyagent.pushed";

// Whether a seed image's annotations say it was pushed more than
// `ttl_seconds` before `now` (no or malformed push time: not expired). Pure.
bool seed_image_expired(const nlohmann::json& annotations, std::int64_t ttl_seconds, std::int64_t now);

// Seed images whose owner (annotations) is gone, older than the TTL whoever
// owns them, or all: deleted by digest. Returns "REPO:TAG@DIGEST" of each
// one removed.
Result<std::vector<std::string>> reap_seed_images(RegistryClient& reg, bool all, std::vector<std::string>* left,
                                                  std::int64_t ttl_seconds, std::int64_t now);

}  // namespace lazyagent
