// Environments on the Kubernetes backend (issue 32): the config's
// `environment:` built by the local podman service exactly as on podman
// (the same key, the same image localhost/lazyagent-env:<key>, the same
// digest in the result), then pushed by that service to k8s.registry as
// REGISTRY/lazyagent-env:<key>; the sandbox pod pulls it pinned by digest
// (images.sandbox = REGISTRY/lazyagent-env@sha256:...), and the stored Job
// is checked to name exactly that (k8s_stored_violations).
//
// Why podman pushes it rather than the registry client of the seed image:
// the image lives in podman's storage; its push writes the layers the
// registry lacks, compressed, with the manifest, in one call, where our
// client would first have to export and re-pack every layer.
//
// Content-addressed by key: when a HEAD of the tag <key> answers and the
// image it names is this one (below), nothing is pushed. Either way the
// image is checked before a sandbox uses it: the manifest fetched by the
// digest the registry named hashes to that digest, and its config is the
// local image's (its digest is the local image id, the sha256 of the config,
// which names the layers' uncompressed digests: the node checks those when it
// unpacks). A tag naming something else (a rebuild under the same key, a
// moved tag) is pushed over, once, and checked again.
//
// Environment images are not per run: `reap` leaves them; `env prune
// --backend k8s` deletes their manifests from the registry with the local
// images (the registry's blobs go with `scripts/k8s-registry.sh gc`).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/environments.h"
#include "engine/k8s/oci_registry.h"

namespace lazyagent {

inline constexpr const char* kEnvironmentRegistryRepo = "lazyagent-env";
// What a HEAD or GET of an environment manifest accepts (podman pushes OCI,
// or Docker v2 schema 2 for an image of that format).
inline constexpr const char* kImageManifestTypes =
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

// The manifest `digest` of REGISTRY/lazyagent-env is there, hashes to its
// digest, and its config is `config_digest` ("sha256:<local image id>").
Status verify_environment_image(RegistryClient& reg, const std::string& digest, const std::string& config_digest);

class K8sEnvironments : public Environments {
 public:
  // `local`: the engine that builds (the local podman service's).
  K8sEnvironments(std::unique_ptr<Engine> local, Environments& local_envs, std::shared_ptr<RegistryClient> reg)
      : local_(std::move(local)), envs_(local_envs), reg_(std::move(reg)) {}

  // Built (or reused) locally, then in the registry (pushed when missing);
  // sets resolved.registry and images.sandbox to the image by digest.
  Status resolve(Config* config, bool rebuild, const ProgressFn& progress) override;
  // The local images, each with "registry" (REGISTRY/lazyagent-env:<key>@digest
  // or null), plus the registry's environment images with no local one
  // (id: REGISTRY/lazyagent-env@digest).
  Result<nlohmann::json> list() override;
  std::string current_key(const Config& config) override { return envs_.current_key(config); }
  // The manifest in the registry, then the local image (when `id` is one).
  Status remove(const std::string& id) override;

 private:
  // The registry's digest for tag `key` (nullopt: none).
  Result<std::optional<std::string>> registry_digest(const std::string& key);
  std::string registry_name() const;

  std::unique_ptr<Engine> local_;
  Environments& envs_;
  std::shared_ptr<RegistryClient> reg_;
};

}  // namespace lazyagent
