// Warm spares, an engine's optional part (Engine::warm_pool; podman's is
// warm_spares.h): sandboxes created, initialised and verified ahead, which
// the next run of the same recipe claims instead of making its own.
//
//   keep_warm        make spares like `spec`'s (no seed, no writes) until
//                    `count` unclaimed ones exist; their names
//   defer_removals   from now on a sandbox's remove() hands its container and
//                    private copy to finish_removals (engine.warm: the CLI
//                    removes them after printing the result, in the process
//                    that makes the next spare); a crash before that leaves
//                    them to the reaper, as any crash does
//   forget_removals  drop that list (the forked child has it)
//   remove_spares    every unclaimed spare (`reap`): "name (id)" of each
//   spares_json      the spares for `sandboxes`, one object each
//
// Engines without spares return null from Engine::warm_pool, and callers
// skip all of this.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "util/result.h"

namespace lazyagent {

class WarmPool {
 public:
  virtual ~WarmPool() = default;
  virtual Result<std::vector<std::string>> keep_warm(const SandboxSpec& spec, int count) = 0;
  virtual void defer_removals() = 0;
  virtual Status finish_removals() = 0;
  virtual void forget_removals() = 0;
  virtual Result<std::vector<std::string>> remove_spares() = 0;
  virtual Result<nlohmann::json> spares_json(std::time_t now) = 0;
};

}  // namespace lazyagent
