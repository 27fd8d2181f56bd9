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
};

}  // namespace lazyagent
