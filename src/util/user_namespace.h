// Doing, as an ordinary user, what a rootless sandbox's files need: work in
// the user's own user namespace, mapped as rootless podman maps it.
//
// A rootless podman service runs in a user namespace of its user: its id 0
// is the user, its ids 1..N the user's first subordinate range (/etc/subuid,
// /etc/subgid), and a sandbox's root is its id 1 (engine/podman/
// rootless_host.h). What the sandbox writes into a session's working copy is
// owned by those subordinate ids, which the user can neither chown to, nor
// read when the sandbox made a file 0600, nor remove from a directory of the
// sandbox's. In a user namespace with the same map the user's process is root
// over its own files (id 0) and the sandbox's (ids 1..N), and over nothing
// else: a file of any other host id is unmapped there, out of its reach.
//
// Why a new namespace rather than joining the service's (as
// read_in_service_userns does through a container's conmon): `podman unshare`
// joins its pause process's namespace when one runs and otherwise makes one
// this same way; a new one needs no running process, so a session is closed
// or reaped after its user's service stopped, or after a reboot, and nothing
// depends on podman's private files (the pause process's pid file). The files
// see the same host ids either way. It needs what rootless podman needs anyway:
// the setuid newuidmap and newgidmap (package uidmap) and user namespaces
// open to users.
//
// run_in_user_namespace forks: the child unshare()s CLONE_NEWUSER, the parent
// runs `newuidmap PID 0 UID 1 1 START COUNT` (and newgidmap), the child runs
// the function and hands its answer back through a pipe (byte_frames.h), then
// _exit()s. The function runs in a forked copy of a process that may have had
// other threads: it must not need a lock another thread could have held
// (glibc's fork keeps malloc usable; touch no stdio stream). It may start
// threads and run programs (a program it runs keeps the capabilities: its
// uid is 0 in the namespace).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

struct IdRange {
  std::int64_t start = 0;
  std::int64_t count = 0;
};

// The first subordinate range of `user` (or of the numeric `uid`) in the
// text of /etc/subuid or /etc/subgid. Pure.
std::optional<IdRange> subordinate_range(const std::string& text, const std::string& user, unsigned uid);

// One line of a uid_map or gid_map: ids inside..inside+count-1 of the
// namespace are host ids outside..outside+count-1.
struct IdMapLine {
  std::int64_t inside = 0;
  std::int64_t outside = 0;
  std::int64_t count = 0;
};

struct UserNsMap {
  std::string who;  // the user's name (or "uid N"), for messages
  std::vector<IdMapLine> uids, gids;
};

// Rootless podman's map of a user: 0 -> uid (gid), 1..count -> the first
// subordinate range. Pure.
UserNsMap rootless_user_map(const std::string& who, unsigned uid, unsigned gid, const IdRange& subuid,
                            const IdRange& subgid);

// newuidmap's (newgidmap's) arguments after the program's name: the pid,
// then each line's inside, outside and count. Pure.
std::vector<std::string> id_map_arguments(long pid, const std::vector<IdMapLine>& lines);

// The map of the user this process runs as, from /etc/subuid and
// /etc/subgid; kUsage naming scripts/setup-rootless.sh when the user has none.
Result<UserNsMap> own_user_map();

// How the child hands fn's answer back (pure): the error's kind and message,
// or the value's bytes.
std::string encode_child_answer(const Result<std::string>& answer);
Result<std::string> decode_child_answer(const std::string& bytes);

// fn's answer, run in a child inside a new user namespace mapped as `map`
// (see above). More than `max_answer` bytes of answer is an error. kUsage
// when the namespace cannot be made (no newuidmap, user namespaces closed,
// ids /etc/subuid does not give the user), each naming the fix.
Result<std::string> run_in_user_namespace(const UserNsMap& map, const std::function<Result<std::string>()>& fn,
                                          std::size_t max_answer);

// Runs `argv` (argv[0] looked up in PATH) with stdin and stdout on
// /dev/null and waits: ok on exit status 0, else an error naming the
// program, its status and its last line on stderr. kUsage when the program
// is not installed.
Status run_program(const std::vector<std::string>& argv);

}  // namespace lazyagent
