#include "sandbox_policy.h"

#include <cmath>

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
  return p;
}

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
  };
}

std::vector<std::string> work_tmpfs_options(const SandboxPolicy& p) {
  // exec allowed: test suites may build and run helpers in their working copy.
  return {"rw", "nosuid", "nodev", "size=" + std::to_string(p.work_tmpfs_bytes), "mode=1777"};
}

std::vector<std::string> tmp_tmpfs_options(const SandboxPolicy& p) {
  return {"rw", "nosuid", "nodev", "noexec", "size=" + std::to_string(p.tmp_tmpfs_bytes),
          "mode=1777"};
}

std::vector<std::string> sandbox_command(const std::string& test_command) {
  // $1 is the test command, passed as an argument so that no quoting of it is
  // ever needed. `exec` makes the test runner the container's main process,
  // so its exit status is the container's.
  static const std::string script = std::string("cp -R ") + kSeedMount + "/. " + kWorkDir +
                                    "/ && cd " + kWorkDir + " && exec /bin/sh -c \"$1\"";
  return {"/bin/sh", "-c", script, "lazyagent-test", test_command};
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
  if (!req.seed_copy_path.empty()) {
    mounts.push_back(json{{"destination", kSeedMount},
                          {"type", "bind"},
                          {"source", req.seed_copy_path},
                          {"options", {"bind", "ro", "nosuid", "nodev", "noexec"}}});
  }
  json env = json::object();
  for (const auto& [k, v] : p.env) env[k] = v;
  return json{
      {"name", req.name},
      {"image", p.image},
      {"command", sandbox_command(req.test_command)},
      {"entrypoint", json::array()},
      {"work_dir", "/"},
      {"hostname", p.hostname},
      {"labels", req.labels},
      {"env", env},
      {"unsetenvall", true},  // drop the image's ENV and podman's defaults
      {"netns", {{"nsmode", "none"}}},
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
}

}  // namespace lazyagent
