#include "policy/runtime_policy.h"

#include <algorithm>

namespace lazyagent {

using nlohmann::json;

namespace {

// Items that only the orchestrator or podman's container setup enforce (the
// same under every runtime): the timeout is our host-side deadline, the
// output cap is the sandbox script plus our read cap, the environment,
// secrets and mounts are what podman hands the runtime.
const std::vector<std::string>& orchestrator_items() {
  static const std::vector<std::string> items = {"timeout", "output_cap"};
  return items;
}

// What runsc with --network=none --ignore-cgroups does not enforce here.
const std::vector<std::string>& runsc_gaps() {
  // user_namespace: the explicit id mapping is not applied under runsc
  // (sandbox_policy.h, UserNamespace::enabled).
  static const std::vector<std::string> gaps = {"memory", "pids", "cpu", "masked_paths", "user_namespace"};
  return gaps;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

const std::vector<std::string>& policy_items() {
  static const std::vector<std::string> items = {
      "network",      "capabilities", "no_new_privileges", "read_only_root", "seccomp",
      "memory",       "pids",         "cpu",               "nofile",         "nproc",
      "tmpfs_size",   "tmpfs_noexec", "masked_paths",      "env_allowlist",  "no_secrets",
      "no_user_mounts", "user_namespace", "timeout", "output_cap"};
  return items;
}

RuntimeGuarantees runtime_guarantees(const std::string& runtime, const std::vector<std::string>& host_gaps) {
  RuntimeGuarantees g;
  g.runtime = runtime;
  for (const auto& item : policy_items()) {
    bool enforced = false;
    if (runtime == kRuntimeRunc || runtime == kRuntimeCrun) enforced = true;
    else if (runtime == kRuntimeRunsc) enforced = !contains(runsc_gaps(), item);
    else enforced = contains(orchestrator_items(), item);
    if (contains(host_gaps, item)) enforced = false;
    (enforced ? g.enforced : g.not_enforced).push_back(item);
  }
  return g;
}

std::string config_key_for(const std::string& item) {
  if (item == "memory") return "limits.memory_mib";
  if (item == "pids") return "limits.pids";
  if (item == "cpu") return "limits.cpus";
  if (item == "nofile") return "limits.nofile";
  if (item == "nproc") return "limits.nproc";
  if (item == "output_cap") return "limits.log_bytes";
  if (item == "timeout") return "timeouts.test_seconds";
  return "";
}

std::vector<std::string> unenforceable_demands(const Config& config, const std::string& runtime) {
  std::vector<std::string> out;
  for (const auto& item : runtime_guarantees(runtime).not_enforced) {
    const std::string key = config_key_for(item);
    if (!key.empty() && contains(config.limits.set_in_config, key)) out.push_back(key + " (" + item + ")");
  }
  return out;
}

Status check_policy_acceptable(const Config& config) {
  const auto demands = unenforceable_demands(config, config.engine.runtime);
  if (demands.empty() || config.engine.accept_weaker_policy) return ok_status();
  std::string all;
  for (const auto& d : demands) all += (all.empty() ? "" : ", ") + d;
  const std::string source = config.source.empty() ? "the config" : config.source;
  return usage_error(source + " demands " + all + ", which " + config.engine.runtime +
                     " does not enforce on this host; remove " +
                     (demands.size() == 1 ? "that limit" : "those limits") +
                     ", use --runtime runc, or accept the weaker policy with "
                     "--accept-weaker-policy (or engine.accept_weaker_policy: true)");
}

namespace {

// "memory (limits.memory_mib: 512)" for a host gap's message.
std::string gap_with_value(const Config& config, const std::string& item) {
  const std::string key = config_key_for(item);
  std::string value;
  if (item == "memory") value = std::to_string(config.limits.memory_mib) + " MiB";
  else if (item == "pids") value = std::to_string(config.limits.pids);
  else if (item == "cpu") {
    value = std::to_string(config.limits.cpus);
    value.erase(value.find_last_not_of('0') + 1);
    if (!value.empty() && value.back() == '.') value.pop_back();
  }
  return item + (key.empty() ? "" : " (" + key + ": " + value + ")");
}

}  // namespace

Status check_host_gaps(const Config& config, const std::vector<std::string>& host_gaps, const std::string& reason) {
  if (host_gaps.empty() || config.engine.accept_weaker_policy) return ok_status();
  std::string all;
  for (const auto& g : host_gaps) all += (all.empty() ? "" : ", ") + gap_with_value(config, g);
  return usage_error("this host's podman cannot enforce the sandbox's " + all + " limit" +
                     (host_gaps.size() == 1 ? "" : "s") + " (" + reason +
                     "); still enforced: the nofile and nproc rlimits, the tmpfs sizes, the timeout and the output "
                     "cap. Refused before any container exists: accept the weaker policy with "
                     "--accept-weaker-policy (or engine.accept_weaker_policy: true), or use root's podman or a "
                     "cgroup v2 host with the controllers delegated");
}

json effective_policy_json(const SandboxPolicy& policy, const std::string& runtime,
                           bool weaker_policy_accepted) {
  json j = policy_to_json(policy);
  const RuntimeGuarantees g = runtime_guarantees(runtime, policy.host_gaps);
  j["runtime"] = runtime;
  j["enforced"] = g.enforced;
  j["not_enforced"] = g.not_enforced;
  j["weaker_policy_accepted"] = weaker_policy_accepted && !g.not_enforced.empty();
  if (!policy.host_gaps.empty()) j["not_enforced_reason"] = policy.host_gaps_reason;
  return j;
}

}  // namespace lazyagent
