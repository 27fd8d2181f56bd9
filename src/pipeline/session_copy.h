// How the host reaches a session's working copy (session_store.h: work/),
// which the sandbox's root owns and every command wrote into.
//
// Root's podman: this process is root, which owns, reads and removes
// whatever the sandbox wrote; the copy is chowned to the sandbox's mapped
// root (the record's host_id) at open.
//
// Rootless (the user's own podman; the record's `rootless`): the sandbox's
// root is the service's id 1, the user's first subordinate id, to which the
// user cannot chown; what the sandbox writes (a 0600 file, a 0700 directory,
// a directory the user may not write to) the user can neither read nor
// remove. So each operation on the copy runs inside the user's own user
// namespace (util/user_namespace.h), where id 1 is that same subordinate id
// and the user is root over it and over nothing of anyone else's: the copy
// handed over (chown to id 1), a file read or written, the change read for a
// diff. The same code runs there as root's, with the same walk: openat one
// component at a time with O_NOFOLLOW (session_files.h), nothing the sandbox
// made followed, nothing outside the session's directory touched. The change
// is judged afterwards, outside: git runs in the user's repository as the
// user, never with the namespace's powers.
//
// Removal (close, reap, a failed open) first as this process; whatever it
// could not remove (the sandbox's, when this process is not root) goes
// inside the user's namespace by `rm -rf --one-file-system`, which never
// follows a link and stays beneath the directory it is given (the rootless
// user's run store has no mount in it: a capped copy needs root).
#pragma once

#include <cstddef>
#include <string>

#include "config.h"
#include "pipeline/session_files.h"
#include "pipeline/session_store.h"
#include "util/result.h"

namespace lazyagent {

// Gives the freshly written copy to the sandbox's root (open).
Status give_copy_to_sandbox(const SessionRecord& rec, const SessionStore& store);

// session_files.h's read_copy_file, write_copy_file (the file and any
// directory made given to the sandbox's root) and diff_copy, on the
// session's copy, where the session's files can be reached (see above).
Result<std::string> read_session_file(const SessionRecord& rec, const SessionStore& store, const std::string& path,
                                      std::size_t max_bytes);
Status write_session_file(const SessionRecord& rec, const SessionStore& store, const std::string& path,
                          const std::string& content);
Result<CopyDiff> diff_session_copy(const SessionRecord& rec, const SessionStore& store, const Config& config,
                                   std::size_t max_bytes);

// Removes a session's directory (see above); missing is fine.
Status remove_session_files(const std::string& dir);

}  // namespace lazyagent
