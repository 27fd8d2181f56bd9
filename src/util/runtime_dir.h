// This user's private directory for facts that outlive one process but not a
// boot: $XDG_RUNTIME_DIR/lazyagent (a tmpfs the session manager makes 0700
// for its user), or /run/lazyagent for root without one. Shared by every run
// store of the user on this machine, so a CI job with a fresh XDG_STATE_HOME
// does not pay again what the last job learned (issue 27: GET /info, 0.7-0.9 s).
//
// A cache another user could write is a way to lie to us (a poisoned
// "oci_runtime" would claim gVisor where runc runs), so nothing here trusts a
// directory or file it does not own: the base directory must be ours (or
// root's /run), not a symlink, and not writable by group or others; the
// lazyagent directory is made 0700 and checked the same way; files are read
// with O_NOFOLLOW and must be regular files owned by us. When any check
// fails the answer is an error and the caller keeps its own cache.
#pragma once

#include <string>

#include "util/result.h"

namespace lazyagent {

// The private directory (created when missing), or why there is none.
// Effectful: lstat, mkdir.
Result<std::string> private_runtime_dir(const char* xdg_runtime_dir);

// The content of `dir`/`name` when it is a regular file owned by this user,
// at most `max_bytes`; an error otherwise (missing included).
Result<std::string> read_owned_file(const std::string& dir, const std::string& name, std::size_t max_bytes);

}  // namespace lazyagent
