// One way to write a file so that a reader sees the old content or the new,
// never half of it, even across a crash: the run store's records, exports,
// eval results, seccomp profiles.
#pragma once

#include <string>

#include "util/result.h"

namespace lazyagent {

// Writes `data` to `path` atomically (temp + fsync + rename + dir fsync).
// The temp file is `path`.tmp.<pid> (the store's sweep removes those of dead
// writers, store_sweep.h).
Status write_file_atomic(const std::string& path, const std::string& data);

}  // namespace lazyagent
