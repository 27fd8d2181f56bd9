// Checks the *effective* container against the policy, before it starts.
//
// podman 4.3.1 silently ignores misspelled create fields (ARCHITECTURE
// section 5): a request that asked for "no network" can produce a container
// on the bridge with default capabilities. So after create + init we read
// back what podman will really run — the inspect document and the OCI runtime
// spec it generated (<StaticDir>/config.json) — and refuse to start on any
// difference. Pure: documents in, violations out.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/sandbox_policy.h"

namespace lazyagent {

struct Violation {
  std::string code;    // network, capabilities, no_new_privileges, read_only_root,
                       // mounts, tmpfs, env, rlimits, resources, labels, secrets,
                       // privileged, command, namespaces, log, user_namespace, runtime,
                       // seccomp
  std::string detail;  // what was found, one sentence
};

std::vector<Violation> verify_effective_config(const SandboxRequest& req,
                                               const std::string& container_id,
                                               const nlohmann::json& inspect,
                                               const nlohmann::json& oci_spec);

// "network: the sandbox joins a network namespace at /run/netns/x; ..." for messages.
std::string describe_violations(const std::vector<Violation>& v);

}  // namespace lazyagent
