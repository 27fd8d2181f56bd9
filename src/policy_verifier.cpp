#include "policy_verifier.h"

#include <algorithm>
#include <set>

namespace lazyagent {
namespace {

using nlohmann::json;

// Reads j[a][b]... returning null when any step is missing.
const json& at(const json& j, std::initializer_list<const char*> keys) {
  static const json null_json;
  const json* cur = &j;
  for (const char* k : keys) {
    if (!cur->is_object() || !cur->contains(k)) return null_json;
    cur = &(*cur)[k];
  }
  return *cur;
}

bool has_option(const json& mount, const std::string& opt) {
  const json& opts = at(mount, {"options"});
  if (!opts.is_array()) return false;
  return std::any_of(opts.begin(), opts.end(),
                     [&](const json& o) { return o.is_string() && o.get<std::string>() == opt; });
}

std::string size_option(const json& mount) {
  const json& opts = at(mount, {"options"});
  if (!opts.is_array()) return "";
  for (const auto& o : opts) {
    if (o.is_string() && o.get<std::string>().rfind("size=", 0) == 0) return o.get<std::string>();
  }
  return "";
}

class Checker {
 public:
  void fail(const char* code, std::string detail) { out.push_back({code, std::move(detail)}); }
  std::vector<Violation> out;
};

void check_namespaces(Checker& c, const json& spec, const json& inspect) {
  const json& ns = at(spec, {"linux", "namespaces"});
  bool net = false;
  std::set<std::string> types;
  if (ns.is_array()) {
    for (const auto& n : ns) {
      const std::string type = n.value("type", "");
      types.insert(type);
      if (type == "network") {
        net = true;
        const std::string path = n.value("path", "");
        if (!path.empty()) c.fail("network", "the sandbox joins an existing network namespace (" + path + ")");
      }
    }
  }
  if (!net) c.fail("network", "the sandbox shares the host's network namespace");
  const json& mode = at(inspect, {"HostConfig", "NetworkMode"});
  if (!mode.is_string() || mode.get<std::string>() != "none") {
    c.fail("network", "podman reports network mode " + (mode.is_string() ? mode.get<std::string>() : std::string("(unset)")) + ", not none");
  }
  for (const char* t : {"pid", "ipc", "uts", "mount"}) {
    if (!types.count(t)) c.fail("namespaces", std::string("the sandbox shares the host's ") + t + " namespace");
  }
}

void check_privileges(Checker& c, const json& spec, const json& inspect) {
  const json& caps = at(spec, {"process", "capabilities"});
  if (caps.is_object()) {
    for (const auto& [set, list] : caps.items()) {
      if (list.is_array() && !list.empty()) {
        c.fail("capabilities", "capability set " + set + " holds " + list.dump());
      }
    }
  }
  const json& eff = at(inspect, {"EffectiveCaps"});
  if (eff.is_array() && !eff.empty()) c.fail("capabilities", "podman reports effective capabilities " + eff.dump());
  if (at(spec, {"process", "noNewPrivileges"}) != true) {
    c.fail("no_new_privileges", "the process may gain privileges (noNewPrivileges is not set)");
  }
  if (at(spec, {"root", "readonly"}) != true) c.fail("read_only_root", "the root filesystem is writable");
  if (at(inspect, {"HostConfig", "Privileged"}) == true) c.fail("privileged", "the container is privileged");
}

// Podman's own per-container files live under a directory named by the
// container id; anything else bind-mounted is a host path and refused.
void check_mounts(Checker& c, const SandboxRequest& req, const std::string& id, const json& spec) {
  static const std::set<std::string> kStandardNonBind = {
      "/proc", "/dev", "/dev/pts", "/dev/mqueue", "/sys", "/sys/fs/cgroup", "/dev/shm"};
  static const std::set<std::string> kStandardBind = {
      "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/.containerenv", "/dev/shm"};
  bool saw_work = false, saw_tmp = false, saw_seed = false;
  const json& mounts = at(spec, {"mounts"});
  if (!mounts.is_array()) {
    c.fail("mounts", "the runtime spec lists no mounts");
    return;
  }
  for (const auto& m : mounts) {
    const std::string dest = m.value("destination", "");
    const std::string type = m.value("type", "");
    const std::string source = m.value("source", "");
    const bool bind = type == "bind" || has_option(m, "bind") || has_option(m, "rbind");
    if (dest == kWorkDir || dest == kTmpDir) {
      const auto& p = req.policy;
      const std::string want =
          "size=" + std::to_string(dest == kWorkDir ? p.work_tmpfs_bytes : p.tmp_tmpfs_bytes);
      if (type != "tmpfs") c.fail("tmpfs", dest + " is a " + type + " mount, not tmpfs");
      else if (size_option(m) != want) c.fail("tmpfs", dest + " tmpfs has '" + size_option(m) + "', want " + want);
      (dest == kWorkDir ? saw_work : saw_tmp) = true;
    } else if (dest == kSeedMount && !req.seed_copy_path.empty()) {
      saw_seed = true;
      if (!bind || source != req.seed_copy_path) c.fail("mounts", "/seed comes from " + source + ", not the private copy");
      if (!has_option(m, "ro")) c.fail("mounts", "/seed is writable");
    } else if (bind) {
      if (!kStandardBind.count(dest) || id.empty() || source.find("/" + id + "/") == std::string::npos) {
        c.fail("mounts", "host path " + source + " is bind-mounted at " + dest);
      }
    } else if (!kStandardNonBind.count(dest)) {
      c.fail("mounts", "unexpected " + type + " mount at " + dest);
    }
    if (dest.rfind("/run/secrets", 0) == 0) c.fail("secrets", "a secret is mounted at " + dest);
  }
  if (!saw_work) c.fail("tmpfs", std::string(kWorkDir) + " has no size-capped tmpfs");
  if (!saw_tmp) c.fail("tmpfs", std::string(kTmpDir) + " has no size-capped tmpfs");
  if (!req.seed_copy_path.empty() && !saw_seed) c.fail("mounts", "the seed copy is not mounted at /seed");
}

void check_env(Checker& c, const SandboxPolicy& p, const json& spec) {
  const json& env = at(spec, {"process", "env"});
  std::set<std::string> seen;
  if (env.is_array()) {
    for (const auto& e : env) {
      const std::string kv = e.is_string() ? e.get<std::string>() : "";
      const auto eq = kv.find('=');
      const std::string name = kv.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
      seen.insert(name);
      auto it = p.env.find(name);
      const auto& added = podman_added_env_names();
      if (it != p.env.end()) {
        if (it->second != value) c.fail("env", name + " is '" + value + "', not '" + it->second + "'");
      } else if (std::find(added.begin(), added.end(), name) == added.end()) {
        c.fail("env", "variable " + name + " is not on the allowlist");
      }
    }
  }
  for (const auto& [k, v] : p.env) {
    if (!seen.count(k)) c.fail("env", "variable " + k + " is missing");
  }
}

void check_limits(Checker& c, const SandboxPolicy& p, const json& spec) {
  auto want = [&](const json& got, std::int64_t value, const char* what) {
    if (!got.is_number_integer() || got.get<std::int64_t>() != value) {
      c.fail("resources", std::string(what) + " is " + (got.is_null() ? "unset" : got.dump()) +
                              ", want " + std::to_string(value));
    }
  };
  want(at(spec, {"linux", "resources", "memory", "limit"}), p.memory_bytes, "memory limit");
  want(at(spec, {"linux", "resources", "pids", "limit"}), p.pids, "pids limit");
  want(at(spec, {"linux", "resources", "cpu", "quota"}), p.cpu_quota, "cpu quota");
  want(at(spec, {"linux", "resources", "cpu", "period"}), p.cpu_period, "cpu period");
  std::int64_t nofile = -1, nproc = -1;
  const json& rl = at(spec, {"process", "rlimits"});
  if (rl.is_array()) {
    for (const auto& r : rl) {
      const std::string type = r.value("type", "");
      const auto soft = r.value("soft", std::int64_t{-1});
      const auto hard = r.value("hard", std::int64_t{-2});
      const std::int64_t v = soft == hard ? soft : -1;
      if (type == "RLIMIT_NOFILE") nofile = v;
      if (type == "RLIMIT_NPROC") nproc = v;
    }
  }
  if (nofile != p.nofile) c.fail("rlimits", "RLIMIT_NOFILE is " + std::to_string(nofile) + ", want " + std::to_string(p.nofile));
  if (nproc != p.nproc) c.fail("rlimits", "RLIMIT_NPROC is " + std::to_string(nproc) + ", want " + std::to_string(p.nproc));
}

void check_inspect(Checker& c, const SandboxRequest& req, const json& spec, const json& inspect) {
  const json& labels = at(inspect, {"Config", "Labels"});
  for (const auto& [k, v] : req.labels) {
    if (!labels.is_object() || !labels.contains(k) || labels[k] != v) c.fail("labels", "label " + k + " is missing or changed");
  }
  const json& secrets = at(inspect, {"Config", "Secrets"});
  if (secrets.is_array() && !secrets.empty()) c.fail("secrets", "the container has secrets attached");
  const json& log_type = at(inspect, {"HostConfig", "LogConfig", "Type"});
  if (log_type != "k8s-file") c.fail("log", "log driver is " + log_type.dump() + ", not k8s-file");
  // podman records which OCI runtime runs the container; a sandbox must run
  // under the runtime its result names (runtime_policy.h says what it enforces).
  const json& runtime = at(inspect, {"OCIRuntime"});
  if (runtime != req.runtime) {
    c.fail("runtime", "the container runs under OCI runtime " + runtime.dump() + ", not \"" + req.runtime + "\"");
  }
  // A seccomp filter: runc applies the spec's; runsc applies it only with
  // --oci-seccomp, which the isolation probe checks from inside.
  const json& seccomp = at(spec, {"linux", "seccomp"});
  if (!seccomp.is_object() || seccomp.value("defaultAction", "") == "SCMP_ACT_ALLOW" ||
      !seccomp.contains("syscalls")) {
    c.fail("seccomp", "the runtime spec has no restricting seccomp profile");
  }
  const json& args = at(spec, {"process", "args"});
  if (args != json(sandbox_command(req.test_command, req.policy.log_bytes))) c.fail("command", "the process would run " + args.dump());
}

}  // namespace

std::vector<Violation> verify_effective_config(const SandboxRequest& req,
                                               const std::string& container_id,
                                               const json& inspect, const json& oci_spec) {
  Checker c;
  check_namespaces(c, oci_spec, inspect);
  check_privileges(c, oci_spec, inspect);
  check_mounts(c, req, container_id, oci_spec);
  check_env(c, req.policy, oci_spec);
  // Under runsc (--ignore-cgroups) the resource limits below are still what
  // podman wrote, and checked as such; runsc does not enforce them, which the
  // result's policy says (runtime_policy.h), never the verifier.
  check_limits(c, req.policy, oci_spec);
  check_inspect(c, req, oci_spec, inspect);
  return c.out;
}

std::string describe_violations(const std::vector<Violation>& v) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += "; ";
    s += x.code + ": " + x.detail;
  }
  return s;
}

}  // namespace lazyagent
