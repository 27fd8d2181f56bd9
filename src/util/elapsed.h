// Milliseconds since a point on the steady clock: the one way every step,
// attempt and task is timed (results' `timings`, eval's `ms`).
#pragma once

#include <chrono>

namespace lazyagent {

inline long ms_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace lazyagent
