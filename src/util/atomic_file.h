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
//
// kRenameOnly skips both fsyncs: still never half a file for a reader, but a
// crash may lose it. Only for a copy of something kept durably elsewhere (a
// signed verdict's envelope file: its record holds the envelope, attest_run.h);
// the fsyncs cost 10-60 ms on a loaded host.
enum class Durability { kSynced, kRenameOnly };
Status write_file_atomic(const std::string& path, const std::string& data, Durability d = Durability::kSynced);

}  // namespace lazyagent
