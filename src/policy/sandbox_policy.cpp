#include "policy/sandbox_policy.h"

#include "policy/live_shell.h"

#include "util/colon_records.h"
#include "util/digest.h"
#include "policy/gvisor_seccomp.h"
#include "policy/isolation_probe.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace lazyagent {

using nlohmann::json;

const std::vector<std::string>& podman_added_env_names() {
  static const std::vector<std::string> names = {"container", "HOSTNAME", "TERM"};
  return names;
}

SandboxPolicy policy_from_config(const Config& config, std::int64_t timeout_seconds) {
  SandboxPolicy p;
  p.image = config.images.sandbox;
  p.memory_bytes = config.limits.memory_mib << 20;
  p.pids = config.limits.pids;
  p.cpu_quota = std::llround(config.limits.cpus * static_cast<double>(p.cpu_period));
  p.nofile = config.limits.nofile;
  p.nproc = config.limits.nproc;
  p.work_tmpfs_bytes = config.limits.work_tmpfs_mib << 20;
  p.tmp_tmpfs_bytes = config.limits.tmp_tmpfs_mib << 20;
  p.log_bytes = config.limits.log_bytes;
  p.timeout_seconds = timeout_seconds;
  p.userns.host_id = config.user_namespace.host_id;
  p.userns.size = config.user_namespace.size;
  p.userns.enabled = config.engine.runtime != "runsc";
  // runsc reads the profile by its own names (policy/gvisor_seccomp.h).
  if (config.engine.runtime == "runsc") {
    p.seccomp = gvisor_seccomp_profile(p.seccomp);
    p.seccomp_adapted_for = "runsc";
  }
  return p;
}

namespace {

json policy_user_json(const UserNamespace& u) {
  if (!u.enabled) {  // gVisor's own root; its Sentry is host uid 65534
    return json{{"mode", "gvisor"}, {"uid_map", nullptr}, {"gid_map", nullptr}};
  }
  if (u.rootless) {  // root inside, a subordinate id of the service's user outside
    return json{{"mode", "rootless_user_namespace"},
                {"uid_map", userns_map_json(u)},  // as the rootless service sees it
                {"gid_map", userns_map_json(u)},
                {"host_uids", {u.outer_uid, u.outer_uid + u.size - 1}},
                {"host_gids", {u.outer_gid, u.outer_gid + u.size - 1}}};
  }
  return json{{"mode", "user_namespace"},  // root inside, an unused high id outside
              {"uid_map", userns_map_json(u)},
              {"gid_map", userns_map_json(u)}};
}

}  // namespace

json policy_to_json(const SandboxPolicy& p) {
  return json{
      {"image", p.image},
      {"network", "none"},
      {"capabilities", json::array()},
      {"no_new_privileges", true},
      {"read_only_root", true},
      {"memory_bytes", p.memory_bytes},
      {"pids", p.pids},
      {"cpus", static_cast<double>(p.cpu_quota) / static_cast<double>(p.cpu_period)},
      {"nofile", p.nofile},
      {"nproc", p.nproc},
      {"work_tmpfs_bytes", p.work_tmpfs_bytes},
      {"tmp_tmpfs_bytes", p.tmp_tmpfs_bytes},
      {"log_bytes", p.log_bytes},
      {"timeout_seconds", p.timeout_seconds},
      {"env_names", [&] {
         json names = json::array();
         for (const auto& [k, v] : p.env) names.push_back(k);
         return names;
       }()},
      {"secrets", json::array()},
      {"user_mounts", json::array()},
      {"user", policy_user_json(p.userns)},
      {"seccomp",
       {{"profile", "oci/seccomp.json"},
        {"adapted_for", p.seccomp_adapted_for.empty() ? json(nullptr) : json(p.seccomp_adapted_for)},
        {"sha256", seccomp_profile_sha256(p.seccomp)},
        {"default_action", p.seccomp.value("defaultAction", "")},
        {"default_errno", p.seccomp.value("defaultErrnoRet", 0)}}},
  };
}

std::vector<std::string> userns_collisions(const UserNamespace& u, const std::string& passwd,
                                           const std::string& group, const std::string& subuid,
                                           const std::string& subgid) {
  std::vector<std::string> out;
  const std::int64_t lo = u.host_id, hi = u.host_id + u.size - 1;
  // field `id_field` (and, for sub-id files, the count in the next field) of
  // each ':'-separated line.
  auto scan = [&](const char* file, const std::string& text, std::size_t id_field, bool ranges) {
    for (const auto& f : colon_records(text)) {
      if (f.size() <= id_field + (ranges ? 1 : 0)) continue;
      char* end = nullptr;
      const long long a = std::strtoll(f[id_field].c_str(), &end, 10);
      if (end == f[id_field].c_str()) continue;
      long long b = a;
      if (ranges) b = a + std::strtoll(f[id_field + 1].c_str(), nullptr, 10) - 1;
      if (a <= hi && b >= lo) {
        out.push_back(std::string(file) + ": " + f[0] + " (ids " + std::to_string(a) + ".." + std::to_string(b) + ")");
      }
    }
  };
  scan("/etc/passwd", passwd, 2, false);
  scan("/etc/group", group, 2, false);
  scan("/etc/subuid", subuid, 1, true);
  scan("/etc/subgid", subgid, 1, true);
  return out;
}

std::string seccomp_profile_sha256(const json& profile) { return sha256_hex(profile.dump()); }

json userns_map_json(const UserNamespace& u) {
  return json::array({{{"container_id", 0}, {"host_id", u.host_id}, {"size", u.size}}});
}

std::vector<std::string> work_tmpfs_options(const SandboxPolicy& p) {
  // exec allowed: test suites may build and run helpers in their working copy.
  return {"rw", "nosuid", "nodev", "size=" + std::to_string(p.work_tmpfs_bytes), "mode=1777"};
}

std::vector<std::string> tmp_tmpfs_options(const SandboxPolicy& p) {
  return {"rw", "nosuid", "nodev", "noexec", "size=" + std::to_string(p.tmp_tmpfs_bytes),
          "mode=1777"};
}

namespace {
std::string runner_script();
}  // namespace

std::vector<std::string> sandbox_command(const std::string& test_command, std::int64_t output_bytes,
                                         const std::string& egress_targets, EgressProbe probe) {
  // $1 is the test command, $2/$3 the head/tail output budgets, $4 the
  // egress probe's targets, $5 "always" to run the egress probe even with
  // only lo (egress_probe.h), all passed as
  // arguments so that no quoting is ever needed.
  //
  // The plumbing leaves no node in any directory the test can see (/tmp,
  // /work, /run): a test that walks and reads its directories finds only
  // what it put there, the seed copy and the empty $TMPDIR (kScratchDir), and
  // one that empties /tmp cannot break the capture. Three processes, joined by anonymous pipes:
  //   writer  the test, stdout and stderr into one pipe (their order kept),
  //           none of the plumbing's descriptors open; then its exit status
  //           as "rc N" on the status pipe (fd 3).
  //   reader  announces its pid ("reader P", read from /proc/self/stat) on
  //           the status pipe, then passes the first $2 bytes on as they
  //           come (`head -c`, unbuffered through stdbuf where present, so a
  //           killed run still shows what it printed), keeps the last $3
  //           bytes (`tail -c`, where runners print their verdict) and drains
  //           the rest, so a flooding test is neither blocked nor killed. The
  //           tail goes into a file created in /tmp and unlinked before the
  //           test starts (fds 5/6/7), to know whether to mark a cut between
  //           head and tail.
  //   status  reads both lines, gives the reader 2 s to finish (background
  //           processes of the test still holding the output pipe do not
  //           keep the sandbox alive: the reader is killed, and they die with
  //           this script, PID 1, when it exits), and exits with the test's
  //           status: the pipeline's, so the script's.
  // The exit status passes through a pipe the test could reach through
  // /proc/PID/fd; that gains it nothing, since it chooses its own exit status
  // anyway. A status that is not a number is 125 (a plumbing failure).
  // Needs only sh, cp, mkdir, rm, head, tail, wc, cat, sleep and /proc. Before the
  // test starts, the isolation probe (isolation_probe.h) prints what this
  // process really gets.
  static const std::string script = std::string("cp -R ") + kSeedMount + "/. " + kWorkDir + "/ && " +
                                    runner_script();
  const std::int64_t tail = output_bytes >= (128 << 10) ? (64 << 10) : output_bytes / 2;
  std::vector<std::string> argv = {"/bin/sh", "-c", script, "lazyagent-test", test_command,
                                   std::to_string(output_bytes - tail), std::to_string(tail), egress_targets};
  if (probe == EgressProbe::kAlways) argv.push_back("always");
  return argv;
}

std::vector<std::string> session_command(const std::string& command, std::int64_t output_bytes,
                                         const std::string& egress_targets) {
  // The working copy is already at /work (the session's, bind-mounted):
  // nothing to copy, the same probe and capture as a test run.
  static const std::string script = runner_script();
  const std::int64_t tail = output_bytes >= (128 << 10) ? (64 << 10) : output_bytes / 2;
  return {"/bin/sh", "-c", script, "lazyagent-session", command,
          std::to_string(output_bytes - tail), std::to_string(tail), egress_targets};
}

std::vector<std::string> sandbox_argv(const SandboxRequest& req) {
  if (req.live_seconds > 0) return live_keeper_argv(req.live_seconds);
  const std::string targets = egress_targets_arg(req.policy);
  return req.work_copy_path.empty() ? sandbox_command(req.test_command, req.policy.log_bytes, targets)
                                    : session_command(req.test_command, req.policy.log_bytes, targets);
}

namespace {

// The part of the sandbox's script after the seed copy: scratch dir, cd
// into /work, the isolation probe, the capped capture (sandbox_command).
std::string runner_script() {
  return std::string("mkdir -p ") + kScratchDir + " && cd " + kWorkDir + " || exit 125\n" +
         isolation_probe_shell() + R"sh(ub=; command -v stdbuf >/dev/null 2>&1 && ub="stdbuf -o0"
t=/tmp/.lazyagent-tail.$$
{ exec 5>"$t" 6<"$t" 7<"$t" && rm -f "$t"; } || exit 125
exec 4>&1
{ { /bin/sh -c "$1" </dev/null 2>&1 3>&- 4>&- 5>&- 6<&- 7<&-; echo "rc $?" >&3; } |
  { read -r r _ </proc/self/stat; echo "reader $r" >&3; exec 3>&-
    $ub head -c "$2"; tail -c "$(($3 + 1))" >&5; n=$(wc -c <&6)
    if [ "$n" -gt "$3" ]; then printf '\n%s: kept the first %s and the last %s bytes]\n' ')sh" +
                                    kOutputCutMarker + R"sh(' "$2" "$3"; tail -c "$3" <&7; else cat <&7; fi
  } >&4 2>&4
} 3>&1 2>/dev/null | { rc= r=
  while [ -z "$rc" ] || [ -z "$r" ]; do read -r k v || break; case "$k" in rc) rc=$v;; reader) r=$v;; esac; done
  [ -z "$r" ] || (sleep 2; kill "$r" 2>/dev/null) &
  case "$rc" in ''|*[!0-9]*) exit 125;; esac
  exit "$rc"; } 4>&- 5>&- 6<&- 7<&-
)sh";
}

}  // namespace

std::string egress_targets_arg(const SandboxPolicy& p) {
  std::string all;
  for (const auto& t : p.egress_probe_targets) all += (all.empty() ? "" : " ") + t;
  return all;
}

namespace {

json tmpfs_mount(const std::string& dest, const std::vector<std::string>& options) {
  return json{{"destination", dest}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", options}};
}

}  // namespace

json build_create_spec(const SandboxRequest& req) {
  const SandboxPolicy& p = req.policy;
  json mounts = json::array({tmpfs_mount(kWorkDir, work_tmpfs_options(p)),
                             tmpfs_mount(kTmpDir, tmp_tmpfs_options(p))});
  if (!req.work_copy_path.empty()) {  // a session: its working copy is /work, kept between commands
    mounts[0] = json{{"destination", kWorkDir},
                     {"type", "bind"},
                     {"source", req.work_copy_path},
                     {"options", {"bind", "rw", "nosuid", "nodev"}}};
  }
  if (!req.seed_copy_path.empty()) {
    mounts.push_back(json{{"destination", kSeedMount},
                          {"type", "bind"},
                          {"source", req.seed_copy_path},
                          {"options", {"bind", "ro", "nosuid", "nodev", "noexec"}}});
  }
  json env = json::object();
  for (const auto& [k, v] : p.env) env[k] = v;
  json spec = json{
      {"name", req.name},
      {"image", p.image},
      {"command", sandbox_argv(req)},
      {"entrypoint", json::array()},
      {"work_dir", "/"},
      {"hostname", p.hostname},
      {"labels", req.labels},
      {"env", env},
      {"unsetenvall", true},  // drop the image's ENV and podman's defaults
      {"netns", {{"nsmode", "none"}}},
      {"seccomp_policy", "default"},  // not "image": an image label must not choose the profile
      {"seccomp_profile_path", req.seccomp_profile_path},
      {"cap_drop", {"ALL"}},
      {"no_new_privileges", true},
      {"read_only_filesystem", true},
      {"mounts", mounts},
      {"resource_limits",
       {{"memory", {{"limit", p.memory_bytes}, {"swap", p.memory_bytes}}},
        {"pids", {{"limit", p.pids}}},
        {"cpu", {{"quota", p.cpu_quota}, {"period", p.cpu_period}}}}},
      {"r_limits",
       {{{"type", "nofile"}, {"soft", p.nofile}, {"hard", p.nofile}},
        {{"type", "nproc"}, {"soft", p.nproc}, {"hard", p.nproc}}}},
      {"timeout", p.timeout_seconds + 5},  // podman's own backstop behind our deadline
      {"stop_timeout", 0},
      {"log_configuration", {{"driver", "k8s-file"}, {"size", p.log_bytes + 64 * 1024}}},
      {"terminal", false},
      {"stdin", false},
  };
  if (!req.cgroup_parent.empty()) spec["cgroup_parent"] = req.cgroup_parent;
  if (req.live_seconds > 0) {
    // Its deadline is its first process's; podman's timeout is the backstop,
    // and podman removes it when it ends, whoever is left (STYLE.md 23).
    spec["remove"] = true;
    spec["timeout"] = req.live_seconds + 60;
  }
  if (p.userns.enabled) {
    spec["userns"] = {{"nsmode", "private"}};
    spec["idmappings"] = {{"HostUIDMapping", false},
                          {"HostGIDMapping", false},
                          {"UIDMap", userns_map_json(p.userns)},
                          {"GIDMap", userns_map_json(p.userns)}};
  }
  return spec;
}

}  // namespace lazyagent
