// One way to write a file so that a reader sees the old content or the new,
// never half of it, even across a crash: the run store's records, exports,
// eval results, seccomp profiles.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace lazyagent {

// Writes `data` to `path` atomically (temp + fsync + rename + dir fsync).
// The temp file is `path`.tmp.<pid> (the store's sweep removes those of dead
// writers, store_sweep.h).
// A full disk (ENOSPC, EDQUOT) is said with the directory, what the write
// needed and what is free there, not as a bare errno.
//
// kRenameOnly skips both fsyncs: still never half a file for a reader, but a
// crash may lose it. Only for a copy of something kept durably elsewhere (a
// signed verdict's envelope file: its record holds the envelope, attest_run.h);
// the fsyncs cost 10-60 ms on a loaded host.
enum class Durability { kSynced, kRenameOnly };
Status write_file_atomic(const std::string& path, const std::string& data, Durability d = Durability::kSynced);

// A full disk under the run store is the user's to fix, and must say so: the
// directory, what the write needed and what was free there, never a bare
// "No space left on device" that reads like a fault of podman.

// Whether a write's errno means the filesystem is full (ENOSPC) or the
// writer's quota is (EDQUOT).
bool is_disk_full_errno(int err);

// Bytes this process may still write on the filesystem of `dir` (root: the
// reserved blocks too); -1 when statvfs cannot tell.
std::int64_t free_bytes(const std::string& dir);

// "no space left under DIR: WHAT needs N bytes, M bytes are free there; free
// space on that filesystem (the run store is $XDG_STATE_HOME/lazyagent-oci)"
Error disk_full_error(const std::string& dir, const std::string& what, std::uint64_t needed);

// Ok when `dir`'s filesystem has room for `needed` bytes (plus a little for
// the records that follow), else disk_full_error: checked before a write
// too big to be left half-done (a run's private copy of the seed).
Status check_free_space(const std::string& dir, const std::string& what, std::uint64_t needed);

}  // namespace lazyagent
