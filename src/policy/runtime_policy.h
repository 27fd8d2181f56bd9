// What each OCI runtime really enforces of the sandbox policy on this host.
//
// runc applies the whole policy, and so does crun (the runtime podman runs by
// default where users have it: the verifier, the isolation probe and the
// limit tests pass under it in the Debian 13 VM, scripts/vm.sh). gVisor
// (runsc) runs here only with
// `--network=none --ignore-cgroups` (ARCHITECTURE section 5): its sandbox has
// no cgroups, so the memory, pids and cpu limits podman writes into the OCI
// spec are not enforced, and runsc ignores the spec's masked paths (its /proc
// and /sys are its own, synthetic). Measured here with runsc 20221219 (podman
// 4.3.1): a 200 MiB allocation under a 64 MiB limit succeeds; tmpfs sizes,
// noexec, RLIMIT_NOFILE and RLIMIT_NPROC are enforced by gVisor's kernel; the
// OCI seccomp profile is applied with `--oci-seccomp`.
//
// A result never claims a limit the runtime did not enforce: its `policy`
// carries the `enforced` / `not_enforced` lists from runtime_guarantees().
// A config that sets a limit explicitly ("demands" it) that the runtime
// cannot enforce is refused unless the user accepts the weaker policy
// (--accept-weaker-policy or engine.accept_weaker_policy). Pure.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "util/result.h"
#include "policy/sandbox_policy.h"

namespace lazyagent {

inline constexpr const char* kRuntimeRunc = "runc";
inline constexpr const char* kRuntimeCrun = "crun";
inline constexpr const char* kRuntimeRunsc = "runsc";

struct RuntimeGuarantees {
  std::string runtime;
  std::vector<std::string> enforced;      // policy items, in a fixed order
  std::vector<std::string> not_enforced;  // same names; empty for runc
};

// Every policy item: network, capabilities, no_new_privileges, read_only_root,
// seccomp, memory, pids, cpu, nofile, nproc, tmpfs_size, tmpfs_noexec,
// masked_paths, env_allowlist, no_secrets, no_user_mounts, timeout, output_cap.
const std::vector<std::string>& policy_items();

// Which items `runtime` ("runc", "crun" or "runsc") enforces. An unknown runtime
// enforces nothing the engine does (only the orchestrator's own timeout and
// output cap), so that a mistake never overstates the policy. `host_gaps`:
// items the host's podman cannot enforce under any runtime
// (SandboxPolicy::host_gaps: rootless podman on cgroup v1).
RuntimeGuarantees runtime_guarantees(const std::string& runtime, const std::vector<std::string>& host_gaps = {});

// The config key behind a policy item that a config can set ("memory" ->
// "limits.memory_mib"), or "" when the item is not configurable.
std::string config_key_for(const std::string& item);

// The items the config demands (sets explicitly) that `runtime` does not
// enforce, as "limits.memory_mib (memory)".
std::vector<std::string> unenforceable_demands(const Config& config, const std::string& runtime);

// kUsage error naming each unenforceable demand, unless
// config.engine.accept_weaker_policy is set.
Status check_policy_acceptable(const Config& config);

// kUsage error naming each host gap with its configured value and `reason`
// (all of them, demanded or default: the sandbox's limits are never silently
// dropped), unless config.engine.accept_weaker_policy is set.
Status check_host_gaps(const Config& config, const std::vector<std::string>& host_gaps, const std::string& reason);

// The `policy` field of results and records: policy_to_json() plus
// `runtime`, `enforced`, `not_enforced` (the runtime's and the policy's
// host_gaps) and `weaker_policy_accepted`; with host gaps, `not_enforced_reason`.
nlohmann::json effective_policy_json(const SandboxPolicy& policy, const std::string& runtime,
                                     bool weaker_policy_accepted);

}  // namespace lazyagent
