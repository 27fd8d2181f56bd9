// Project test images, an engine's optional part (Engine::environments;
// podman's is environment.h): the config's `environment:` built once and
// reused by key. Engines that cannot build one say so through
// Engine::environments' error, which names what to do instead.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config.h"
#include "util/progress.h"
#include "util/result.h"

namespace lazyagent {

// Where a built environment image is sent (the Kubernetes backend's
// registry, k8s.registry: k8s_environments.h).
struct ImagePushTarget {
  std::string destination;  // REGISTRY/REPO:TAG
  bool tls_verify = true;   // false: plain http (a registry on loopback)
  std::string username, password;
  long timeout_ms = 1800000;
};

class Environments {
 public:
  virtual ~Environments() = default;
  // Makes sure the config's environment image exists (built when it does not,
  // or when `rebuild`); sets config->environment.resolved and
  // config->images.sandbox to it.
  virtual Status resolve(Config* config, bool rebuild, const ProgressFn& progress) = 0;
  // Every environment image: {image, key, id, base, size, created} each.
  virtual Result<nlohmann::json> list() = 0;
  // The key the config's environment would have now ("" when it cannot be
  // told: no environment, no seed, an unreadable input or base).
  virtual std::string current_key(const Config& config) = 0;
  virtual Status remove(const std::string& id) = 0;
  // Pushes the environment image `image` (resolved.image) to `target`; the
  // caller checks the registry for what arrived. Builders that keep their
  // images elsewhere say so.
  virtual Status push(const std::string& image, const ImagePushTarget& target) {
    (void)target;
    return usage_error("environment: " + image + " cannot be pushed from here");
  }
};

}  // namespace lazyagent
