// The test sandbox's policy, and the libpod create request that asks for it.
//
// Threat model: the code under test was written by a model and is hostile. It
// may try to reach the network (exfiltrate, call home), read secrets (the
// CLI's environment, the provider key), write outside its working copy (the
// user's seed, the host disk), exhaust the host (fork, memory, disk, output,
// time) or attack the terminal that shows its output. The sandbox therefore
// gets: no network namespace peers (nsmode none: only `lo`), no capabilities,
// no-new-privileges, a read-only root, size-capped tmpfs for the working copy
// and /tmp, cgroup caps on memory, pids and cpu, rlimits, a kill timeout, a
// capped log, a fixed environment allowlist, labels for reaping, and no
// secrets or user paths. Its root is not the host's root: it runs in a
// private user namespace whose ids map to a high host range no host user
// has (user_namespace in the config), so a process that escapes the
// container's other walls is an unprivileged, unknown uid on the host. A
// seccomp allowlist stricter than podman's default (oci/seccomp.json, shared
// with the OCI export) refuses the kernel interfaces a test run never needs:
// new namespaces, mounts, ptrace, keyrings, bpf, perf, io_uring, userfaultfd,
// modules, kexec. The seed arrives as a private read-only copy made by
// this tool (never the user's directory), copied into the tmpfs at start.
//
// The same policy value is what the verifier checks the effective container
// against (policy_verifier.h) and what exports turn into other formats.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "policy/oci_seccomp.h"

namespace lazyagent {

// Where things live inside the sandbox.
inline constexpr const char* kSeedMount = "/seed";   // read-only private copy
inline constexpr const char* kWorkDir = "/work";     // tmpfs working copy
inline constexpr const char* kTmpDir = "/tmp";       // tmpfs, noexec
// The test's $TMPDIR: an executable scratch directory inside the /work tmpfs
// (its size cap), made by the sandbox's script before the test starts. /tmp
// stays noexec; compilers and test runners that build and run binaries under
// $TMPDIR (go test, a CMake build dir under it) work (README "Compiled languages").
inline constexpr const char* kScratchDir = "/work/.lazyagent-tmp";

// Labels on every container the project creates (ARCHITECTURE section 4).
inline constexpr const char* kLabelRole = "io.lazyagent.role";
inline constexpr const char* kLabelRun = "io.lazyagent.run";
inline constexpr const char* kLabelOwner = "io.lazyagent.owner";     // uid@host
inline constexpr const char* kLabelPid = "io.lazyagent.pid";         // orchestrator pid
inline constexpr const char* kLabelPidStart = "io.lazyagent.pidstart"; // its start time

// The sandbox's uid/gid mapping: container ids 0..size-1 are host ids
// host_id..host_id+size-1 (the same range for uids and gids).
struct UserNamespace {
  std::int64_t host_id = 1879048192;
  std::int64_t size = 65536;
  // false under gVisor (runsc): its gofer would run inside the mapping and
  // cannot reach the private copy under a 0700 home directory (measured:
  // "stat(...): permission denied" at create); there the sandbox's root is
  // gVisor's own, and the Sentry runs on the host as uid 65534.
  bool enabled = true;
  // A user's rootless podman (engine/podman/rootless_host.h): host_id is the
  // service's id 1, its first subordinate id, which is host id outer_uid
  // (outer_gid for groups). The result reports the outer ranges.
  bool rootless = false;
  std::int64_t outer_uid = 0, outer_gid = 0;
};

struct SandboxPolicy {
  std::string image;
  std::int64_t memory_bytes = 512LL << 20;
  std::int64_t pids = 256;
  std::int64_t cpu_period = 100000;
  std::int64_t cpu_quota = 100000;  // 1 CPU
  std::int64_t nofile = 1024;
  std::int64_t nproc = 256;
  std::int64_t work_tmpfs_bytes = 64LL << 20;
  std::int64_t tmp_tmpfs_bytes = 64LL << 20;
  std::int64_t log_bytes = 1 << 20;
  std::int64_t timeout_seconds = 120;
  std::string hostname = "sandbox";
  UserNamespace userns;
  // Items the host's podman cannot enforce whatever the runtime ("memory",
  // "pids", "cpu" for rootless podman on cgroup v1), and why: set by the
  // engine (rootless_host.h); refused unless the weaker policy is accepted,
  // then listed as not enforced (runtime_policy.h). The verifier does not
  // demand them in the OCI spec.
  std::vector<std::string> host_gaps;
  std::string host_gaps_reason;
  // Why the host cannot freeze the sandbox (podman pause), "" when it can:
  // set by the engine (rootless_host.h: rootless podman on cgroup v1).
  std::string no_freezer;
  // Addresses the egress probe tries beyond what it finds itself
  // ("label=host:port", egress_probe.h): the engine's (Kubernetes: the API).
  std::vector<std::string> egress_probe_targets;
  // The seccomp profile (OCI runtime-spec form) the sandbox must run under:
  // oci/seccomp.json as built into the binary (oci_seccomp.h).
  nlohmann::json seccomp = oci_seccomp_profile();
  // "runsc" when `seccomp` is oci/seccomp.json in gVisor's names
  // (policy/gvisor_seccomp.h), else empty.
  std::string seccomp_adapted_for;
  // The complete environment of the test process (the allowlist).
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", kWorkDir},
      {"LANG", "C.UTF-8"},
      {"PYTHONDONTWRITEBYTECODE", "1"},
      {"PYTHONUNBUFFERED", "1"},
      {"TMPDIR", kScratchDir},
  };
};

// Names podman itself adds to every container's environment; allowed.
const std::vector<std::string>& podman_added_env_names();

SandboxPolicy policy_from_config(const Config& config, std::int64_t timeout_seconds);

// The policy as JSON (the `policy` field of results: the limits in force).
nlohmann::json policy_to_json(const SandboxPolicy& p);

// The uid (and gid) map as libpod wants it: [{container_id, host_id, size}].
nlohmann::json userns_map_json(const UserNamespace& u);

// Host users, groups and subordinate ranges whose ids fall in the sandbox's
// range, one "FILE: NAME (ids A..B)" each; empty when the range is unused.
// Inputs are the texts of /etc/passwd, /etc/group, /etc/subuid, /etc/subgid.
std::vector<std::string> userns_collisions(const UserNamespace& u, const std::string& passwd,
                                           const std::string& group, const std::string& subuid,
                                           const std::string& subgid);

// sha256 of the profile's canonical JSON text (sorted keys, no spaces).
std::string seccomp_profile_sha256(const nlohmann::json& profile);

// Tmpfs option lists, shared by the request and the verifier.
std::vector<std::string> work_tmpfs_options(const SandboxPolicy& p);
std::vector<std::string> tmp_tmpfs_options(const SandboxPolicy& p);

// What the sandbox prints between the head and the tail of an output longer
// than its budget: "[lazyagent-oci: output cut: kept the first H and the last T bytes]".
inline constexpr const char* kOutputCutMarker = "[lazyagent-oci: output cut";

// The shell program the sandbox runs: copy the seed into the tmpfs, run the
// test command there with its output capped at `output_bytes` (head and
// tail kept), exit with its status. Before the test, the isolation probe
// (isolation_probe.h) with the egress probe's targets (egress_probe.h:
// "label=host:port", space-separated; the engine's, e.g. the Kubernetes API).
// argv = {"/bin/sh", "-c", script, "lazyagent-test", test_command, HEAD, TAIL, TARGETS[, "always"]}.
// The egress probe runs where the sandbox has an interface besides lo, or
// always (kAlways: Kubernetes, where the isolation modes rest on it and a
// pod's start is seconds, so its 30-50 ms cost nothing there).
enum class EgressProbe { kWhenRouted, kAlways };
std::vector<std::string> sandbox_command(const std::string& test_command,
                                         std::int64_t output_bytes,
                                         const std::string& egress_targets = "",
                                         EgressProbe probe = EgressProbe::kWhenRouted);
// A session's command (session.h): the same probe and capture, run in the
// working copy the engine bind-mounts at /work (no seed copy, no tmpfs there).
// argv = {"/bin/sh", "-c", script, "lazyagent-session", command, HEAD, TAIL, TARGETS}.
std::vector<std::string> session_command(const std::string& command, std::int64_t output_bytes,
                                         const std::string& egress_targets = "");
// The policy's egress_probe_targets as sandbox_command's TARGETS.
std::string egress_targets_arg(const SandboxPolicy& p);

struct SandboxRequest {
  SandboxPolicy policy;
  std::string name;                       // unique container name
  std::map<std::string, std::string> labels;
  std::string seed_copy_path;             // host path of the private copy ("" = upload)
  std::string seccomp_profile_path;       // host path of policy.seccomp, written for podman to read
  // A session's working copy (host path), bind-mounted read-write at /work in
  // place of the tmpfs; the container runs session_command(test_command).
  std::string work_copy_path;
  std::string test_command;
  // A live session's sandbox (live_shell.h): > 0, its first process waits
  // this long and the container ends (podman removes it: `remove`); each
  // command is an exec. 0: the container runs test_command once.
  std::int64_t live_seconds = 0;
  std::string runtime = "runc";           // the OCI runtime the service must use (runtime_policy.h)
  std::string cgroup_parent;              // "" = podman's default (cgroup_usage.h: why a run has its own)
};

// What the sandbox's process runs: sandbox_command, session_command for a
// session's command, or live_keeper_argv for a live session's sandbox.
std::vector<std::string> sandbox_argv(const SandboxRequest& req);

// libpod SpecGenerator JSON for POST /libpod/containers/create. Field names
// were checked against podman 4.3.1, which silently ignores unknown ones.
// The id mappings are containers/storage IDMappingOptions: Go field names
// (HostUIDMapping, UIDMap, ...) but each map entry has json tags
// (container_id, host_id, size): `{"ContainerID":0,"HostID":N,...}` is
// accepted and silently maps the sandbox's root to host uid 0 (measured).
nlohmann::json build_create_spec(const SandboxRequest& req);

}  // namespace lazyagent
