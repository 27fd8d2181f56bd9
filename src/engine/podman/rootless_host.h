// Whose podman the sandbox runs on, and what that podman can enforce here.
//
// A rootless podman service (a user's own, README "Without root") runs in a
// user namespace of its user: its uid 0 is the user, its ids 1..N are the
// user's subordinate ids (/etc/subuid, /etc/subgid). The sandbox's ids are
// mapped inside that range (container 0..size-1 -> service ids 1..size ->
// host ids start..start+size-1), never onto the user's own uid, so that a
// process that escapes the container owns none of the user's files.
//
// The facts are read cheaply, once per engine, never through podman's
// /libpod/info (0.7 s here, ARCHITECTURE section 5):
//   rootless     the service socket's owner is not root (podman makes its
//                socket as the user it runs as)
//   subordinate  the owner's first range in /etc/subuid and /etc/subgid (by
//                name or uid), which podman maps after the user's own id
//   cgroups      /sys/fs/cgroup is cgroup2 (v2) or not (v1 or hybrid); on v2
//                the controllers delegated to the user's systemd unit
//                (user@UID.service/cgroup.controllers)
// On cgroup v1 an unprivileged user gets no memory, pids or cpu controller:
// rootless podman drops those limits with only a client-side warning
// (measured: HostConfig.Memory=0, no linux.resources in the OCI spec, 512 MiB
// allocated under a 64 MiB limit). Those items are the host's gaps
// (SandboxPolicy::host_gaps): refused by name unless the weaker policy is
// accepted, then listed as not enforced (runtime_policy.h), as for gVisor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/sandbox_policy.h"
#include "util/result.h"
#include "util/user_namespace.h"  // IdRange, subordinate_range

namespace lazyagent {

struct RootlessHost {
  bool rootless = false;     // the service runs as an ordinary user
  unsigned uid = 0;          // whose service (the socket's owner)
  std::string user;          // that user's name ("" when not in /etc/passwd)
  std::optional<IdRange> subuid, subgid;  // the first subordinate ranges
  bool cgroup_v2 = false;    // /sys/fs/cgroup is the unified hierarchy
  std::vector<std::string> delegated;     // v2: controllers the user's unit has
  // The policy items this host's podman cannot enforce ("memory", "pids",
  // "cpu"); empty for root's service.
  std::vector<std::string> gaps;
  // Why, one sentence naming the host ("rootless podman on cgroup v1: ...").
  std::string gaps_reason;
};

// The host gaps and their reason for a rootless service (pure).
void fill_gaps(RootlessHost* h);

// The facts for the service behind `socket_path` (see above).
RootlessHost rootless_host_of(const std::string& socket_path);

// Maps the sandbox into the service's subordinate range (rootless only):
// container 0..size-1 -> service ids 1..size, host ids subuid.start..; the
// host gaps recorded in the policy. kUsage when the user has no subordinate
// ids or too few for the policy's size (scripts/setup-rootless.sh adds them).
Status adapt_policy_to_host(const RootlessHost& h, SandboxPolicy* policy);

// Hands the private copy to the sandbox's root. As root: chown to the
// mapped host id (seed_snapshot.h chown_tree). Rootless the user cannot
// chown to a subordinate id, so the copy (inside a 0700 run directory of the
// user's) is made readable by others instead: files a+r, directories and
// executables a+rx; runc opens the bind mount's source as the user, the
// sandbox reads the files as "other". Errors that no retry fixes are kUsage.
Status hand_copy_to_sandbox(const std::string& path, const UserNamespace& u);

// Reads a file podman keeps for a container under its rootless service's
// ids (the OCI spec in StaticDir: userdata is chowned to the sandbox's root,
// a subordinate id, mode 0700, so the user cannot open it). A child process
// enters the user namespace of `ns_pid` (the container's conmon, which runs
// in the service's namespace: the user owns it, so the child gets the
// capabilities there that `podman unshare` has) and passes the file back
// through a pipe, at most `max` bytes. Not following symlinks.
Result<std::string> read_in_service_userns(long ns_pid, const std::string& path, std::size_t max);

// A rootless service gives a container a network (the planner's bridge, an
// environment set-up's) through slirp4netns, which opens /dev/net/tun as the
// service's user. Debian's udev makes it 0666; a host whose /dev/net/tun is
// root's alone (a container host: 0600) fails every such start inside podman
// ("slirp4netns failed: open(/dev/net/tun): Permission denied") and leaves the
// user's rootless network namespace half made. Checked before any container
// exists: kUsage naming the fix, when `h` is rootless and this process runs as
// its user (who else would open it); ok otherwise. `what` names the user of
// the network ("the planner's network").
Status check_rootless_network(const RootlessHost& h, const std::string& what);

// "rootless (user rl, uid 1001; sandbox ids -> host 100000..165535)" or
// "root's podman (sandbox ids -> host 1879048192..1879113727)".
std::string describe_mapping(const RootlessHost& h, const UserNamespace& u);

}  // namespace lazyagent
