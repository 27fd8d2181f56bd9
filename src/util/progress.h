// How a long operation reports what it is doing, for every floor: the
// pipeline's "==> step" lines and an engine's notes ("reaped 2 container(s)
// ...", "podman warning: ..."). May be empty (then nothing is said).
#pragma once

#include <functional>
#include <string>

namespace lazyagent {

using ProgressFn = std::function<void(const std::string&)>;

}  // namespace lazyagent
