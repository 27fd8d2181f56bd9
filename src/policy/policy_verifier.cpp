#include "policy/policy_verifier.h"

#include <algorithm>
#include <map>
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

// The sandbox's root must be the policy's high host id, never host root: a
// user namespace of its own, mapped exactly as asked (both uids and gids).
void check_userns(Checker& c, const UserNamespace& u, const json& spec) {
  const json& ns = at(spec, {"linux", "namespaces"});
  bool user = false;
  if (ns.is_array()) {
    for (const auto& n : ns) {
      if (n.value("type", "") != "user") continue;
      user = true;
      const std::string path = n.value("path", "");
      if (!path.empty()) c.fail("user_namespace", "the sandbox joins an existing user namespace (" + path + ")");
    }
  }
  if (!user) c.fail("user_namespace", "the sandbox shares the host's user namespace: its root is host root");
  const json want = json::array({{{"containerID", 0}, {"hostID", u.host_id}, {"size", u.size}}});
  for (const char* key : {"uidMappings", "gidMappings"}) {
    const json& got = at(spec, {"linux", key});
    if (got == want) continue;
    std::string detail = std::string(key) + " is " + (got.is_null() ? "unset" : got.dump()) + ", want " + want.dump();
    if (got.is_array()) {
      for (const auto& m : got) {
        if (m.is_object() && m.value("hostID", std::int64_t{-1}) == 0) {
          detail += " (host id 0 is mapped: the sandbox's root would be host root)";
          break;
        }
      }
    }
    c.fail("user_namespace", detail);
  }
}

// name -> every rule that mentions it, as "action errno args" strings: two
// profiles are the same filter when these maps are equal. podman drops
// zero-valued fields (valueTwo, errnoRet) when it copies a profile.
std::map<std::string, std::multiset<std::string>> seccomp_rules_by_name(const json& profile) {
  std::map<std::string, std::multiset<std::string>> out;
  const json& rules = at(profile, {"syscalls"});
  if (!rules.is_array()) return out;
  for (const auto& r : rules) {
    std::string key = r.value("action", "") + " errno=" + std::to_string(r.value("errnoRet", 0)) + " args=";
    const json& args = at(r, {"args"});
    if (args.is_array()) {
      for (const auto& a : args) {
        key += "[" + std::to_string(a.value("index", 0)) + " " + a.value("op", "") + " " +
               std::to_string(a.value("value", std::uint64_t{0})) + " " +
               std::to_string(a.value("valueTwo", std::uint64_t{0})) + "]";
      }
    }
    const json& names = at(r, {"names"});
    if (!names.is_array()) continue;
    for (const auto& n : names) {
      if (n.is_string()) out[n.get<std::string>()].insert(key);
    }
  }
  return out;
}

// The filter podman put in the spec must be ours (oci/seccomp.json), not
// podman's default or an image's: same default action and errno, same
// architectures, the same rules for every syscall.
void check_seccomp(Checker& c, const json& want, const json& spec) {
  const json& got = at(spec, {"linux", "seccomp"});
  if (!want.is_object()) return c.fail("seccomp", "the policy names no seccomp profile to check against");
  if (!got.is_object()) return c.fail("seccomp", "the sandbox has no seccomp filter");
  if (got.value("defaultAction", "") != want.value("defaultAction", "") ||
      got.value("defaultErrnoRet", 0) != want.value("defaultErrnoRet", 0)) {
    c.fail("seccomp", "the default action is " + got.value("defaultAction", std::string("(unset)")) +
                          " errno " + std::to_string(got.value("defaultErrnoRet", 0)) + ", want " +
                          want.value("defaultAction", "") + " errno " +
                          std::to_string(want.value("defaultErrnoRet", 0)));
  }
  auto arches = [](const json& p) {
    std::set<std::string> s;
    for (const auto& a : at(p, {"architectures"})) s.insert(a.is_string() ? a.get<std::string>() : "");
    return s;
  };
  if (arches(got) != arches(want)) c.fail("seccomp", "the architectures are " + at(got, {"architectures"}).dump());
  const auto g = seccomp_rules_by_name(got), w = seccomp_rules_by_name(want);
  if (g == w) return;
  std::vector<std::string> differ;
  for (const auto& [name, rules] : w) {
    auto it = g.find(name);
    if (it == g.end() || it->second != rules) differ.push_back(name);
  }
  for (const auto& [name, rules] : g) {
    if (!w.count(name)) differ.push_back(name);
  }
  std::sort(differ.begin(), differ.end());
  std::string list;
  for (std::size_t i = 0; i < differ.size() && i < 8; ++i) list += (i ? ", " : "") + differ[i];
  if (differ.size() > 8) list += " and " + std::to_string(differ.size() - 8) + " more";
  c.fail("seccomp", "the seccomp profile is not lazyagent's: the rules for " + list + " differ");
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
    if (dest == kWorkDir && !req.work_copy_path.empty()) {  // a session's working copy
      saw_work = true;
      if (!bind || source != req.work_copy_path) c.fail("mounts", "/work comes from " + source + ", not the session's copy");
    } else if (dest == kWorkDir || dest == kTmpDir) {
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
  // A host gap (rootless podman on cgroup v1: memory, pids, cpu) is a limit
  // podman drops; the result lists it as not enforced (runtime_policy.h), and
  // the run was refused unless that was accepted. The others must be there.
  auto gap = [&](const char* item) {
    return std::find(p.host_gaps.begin(), p.host_gaps.end(), item) != p.host_gaps.end();
  };
  if (!gap("memory")) want(at(spec, {"linux", "resources", "memory", "limit"}), p.memory_bytes, "memory limit");
  if (!gap("pids")) want(at(spec, {"linux", "resources", "pids", "limit"}), p.pids, "pids limit");
  if (!gap("cpu")) {
    want(at(spec, {"linux", "resources", "cpu", "quota"}), p.cpu_quota, "cpu quota");
    want(at(spec, {"linux", "resources", "cpu", "period"}), p.cpu_period, "cpu period");
  }
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
  // The seccomp filter is checked whole by check_seccomp; runsc applies it
  // only with --oci-seccomp, which the isolation probe checks from inside.
  const json& args = at(spec, {"process", "args"});
  if (args != json(sandbox_argv(req))) c.fail("command", "the process would run " + args.dump());
}

}  // namespace

std::vector<Violation> verify_effective_config(const SandboxRequest& req,
                                               const std::string& container_id,
                                               const json& inspect, const json& oci_spec) {
  Checker c;
  check_namespaces(c, oci_spec, inspect);
  if (req.policy.userns.enabled) check_userns(c, req.policy.userns, oci_spec);
  check_seccomp(c, req.policy.seccomp, oci_spec);
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
