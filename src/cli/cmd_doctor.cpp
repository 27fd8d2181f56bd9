// `lazyagent-oci doctor`: is this host ready, and if not, what to do.
//
// Each check names what it looked at, its finding, and the fix. The host
// quirks are the ones measured on Debian 12 / podman 4.3.1 (ARCHITECTURE
// section 5): hybrid cgroups need runc, a missing CAP_SYS_RESOURCE needs
// explicit nofile limits, images must be built locally.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/podman/podman_client.h"
#include "engine/podman/rootless_host.h"
#include "policy/sandbox_policy.h"
#include "engine/podman/runtime_engine.h"
#include "engine/podman/cgroup_usage.h"
#include "engine/podman/service_facts.h"
#include "policy/runtime_policy.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

struct Check {
  std::string name;
  std::string status;  // ok | warn | fail
  std::string detail;
  std::string fix;
};

bool cgroup_hybrid() {
  struct stat st {};
  std::ifstream mounts("/proc/self/mounts");
  std::string line;
  bool v1 = false, unified = false;
  while (std::getline(mounts, line)) {
    if (line.find(" /sys/fs/cgroup/unified cgroup2 ") != std::string::npos) unified = true;
    if (line.find(" cgroup ") != std::string::npos && line.find("/sys/fs/cgroup/") != std::string::npos) v1 = true;
  }
  (void)st;
  return v1 && unified;
}

std::string user_name() {
  const struct passwd* pw = ::getpwuid(::getuid());
  return pw ? pw->pw_name : std::to_string(::getuid());
}

bool has_cap_sys_resource() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
      return (caps >> 24) & 1ULL;  // CAP_SYS_RESOURCE = 24
    }
  }
  return false;
}

std::vector<Check> run_checks(const Config& config, const std::string& config_path) {
  std::vector<Check> checks;
  // Which config the other checks judge (the images it names, the user
  // namespace): the file found, or none and the built-in defaults.
  if (config_path.empty()) {
    checks.push_back({"config", "warn",
                      "no config file found (--config, $LAZYAGENT_CONFIG, ./config/lazyagent.yaml, the installed "
                      "share/lazyagent-oci/config/lazyagent.yaml): using the built-in defaults, which name no seed",
                      "pass --config FILE, set LAZYAGENT_CONFIG, or run from the repository's directory"});
  } else {
    checks.push_back({"config", "ok", "read " + config_path, ""});
  }
  auto socket = podman_socket_from_env();
  if (!socket) {
    checks.push_back({"socket", "fail", socket.error().message, "set CONTAINER_HOST=unix:///path/to/podman.sock"});
    return checks;
  }
  PodmanClient podman(*socket);
  auto version = podman.ping();
  if (!version) {
    const std::string start = "podman --runtime runc system service --time=0 unix://" + *socket + " &";
    checks.push_back({"socket", "fail", version.error().message,
                      ::getuid() == 0 ? "run scripts/setup.sh, or: " + start
                                      : "as root: scripts/setup-rootless.sh " + user_name() +
                                            " (starts your podman service on " + *socket +
                                            "), or set CONTAINER_HOST=unix:///path/to/podman.sock"});
    return checks;
  }
  checks.push_back({"socket", "ok", *socket, ""});
  checks.push_back({"api", "ok", "libpod API " + *version, ""});

  const RunStore facts_store = default_run_store();
  auto facts = service_facts(podman, facts_store);
  const std::string runtime = facts ? facts->oci_runtime : "";
  const bool hybrid = cgroup_hybrid();
  // The main service runs the planner and the runc or crun sandboxes (the
  // one it runs: runtime_engine.h); runsc sandboxes have their own service,
  // checked below.
  if (!facts) {
    checks.push_back({"runtime", "fail", facts.error().message, "check the podman service's log"});
  } else if (hybrid && runtime == kRuntimeCrun) {
    checks.push_back({"runtime", "fail", "podman's service uses crun, which refuses a cgroups v1+v2 hybrid host",
                      "restart the service with `podman --runtime runc system service ...` or set [engine] runtime "
                      "= \"runc\" in containers.conf (the create request cannot choose it)"});
  } else if (config.engine.runtime == kRuntimeRunsc) {
    checks.push_back({"runtime", "ok", "podman's service uses " + runtime + " (the planner's; sandboxes on runsc's own)", ""});
  } else {
    const auto chosen = choose_sandbox_runtime(config.engine.runtime_explicit ? config.engine.runtime : "", runtime,
                                               *socket);
    checks.push_back({"runtime", chosen ? "ok" : "fail",
                      chosen ? "podman's service uses " + runtime + ": sandboxes run under it" : chosen.error().message,
                      ""});
  }
  if (facts) {
    const bool cgroupfs = facts->cgroup_manager == "cgroupfs";
    const bool scopes = facts->cgroup_manager == "systemd" && cgroup_layout("/sys/fs/cgroup") == "v2";
    checks.push_back({"cgroup manager", cgroupfs || scopes ? "ok" : "warn",
                      cgroupfs ? "cgroupfs: each run's cpu, memory and pids figures are read from its own cgroup"
                      : scopes ? "systemd on cgroup v2: each run's figures are read from its scope while it runs"
                               : "'" + facts->cgroup_manager + "': the limits hold, but a run's resources (cpu_ms, "
                                 "memory and pids peaks) are not read under it",
                      ""});
  }
  {
    Config gvisor = config;
    gvisor.engine.runtime = "runsc";
    auto sock = podman_socket_for_runtime(gvisor);
    Status st = sock ? ok_status() : Status(sock.error());
    if (sock) {
      PodmanClient runsc(*sock);
      auto chosen = check_engine_runtime(runsc, "runsc", facts_store);
      if (!chosen) st = chosen.error();
    }
    const bool needed = config.engine.runtime == "runsc";
    checks.push_back({"runsc", st ? "ok" : needed ? "fail" : "warn",
                      st ? "gVisor service on " + *sock + " (memory/pids/cpu limits not enforced there)"
                         : st.error().message,
                      st ? "" : "needed only for --runtime runsc: run scripts/setup.sh"});
  }
  checks.push_back({"cgroups", hybrid ? "warn" : "ok",
                    hybrid ? "cgroups v1+v2 hybrid: crun refuses it, runc works" : "not hybrid",
                    hybrid ? "keep runc as the runtime (scripts/setup.sh configures it)" : ""});
  checks.push_back({"rlimits", has_cap_sys_resource() ? "ok" : "warn",
                    has_cap_sys_resource() ? "CAP_SYS_RESOURCE present"
                                           : "no CAP_SYS_RESOURCE: podman's default nofile=1048576 makes starts fail",
                    has_cap_sys_resource() ? "" : "lazyagent-oci sets nofile/nproc itself; for plain `podman run`, "
                                                  "scripts/setup.sh adds default_ulimits to containers.conf"});
  // Every image the config names: `test` needs the sandbox's, `run` both.
  for (const auto& [key, image] : {std::pair<std::string, std::string>{"images.sandbox", config.images.sandbox},
                                   std::pair<std::string, std::string>{"images.planner", config.images.planner}}) {
    auto img = podman.image_inspect(image, key);
    checks.push_back({"image " + image, img ? "ok" : "fail",
                      img ? key + ": " + image_hash_text(img->value("Id", "")) +
                                (img->value("Digest", "").empty() ? "" : ", " + image_hash_text(img->value("Digest", "")))
                          : img.error().message,
                      img ? "" : "run lazyagent-oci images build --only " + key.substr(7) + " (no registry is needed), or set " + key +
                                     " in the config to an image that exists"});
  }
  {
    auto text = [](const char* path) {
      std::ifstream f(path);
      std::stringstream ss;
      ss << f.rdbuf();
      return ss.str();
    };
    const auto& u = config.user_namespace;
    const RootlessHost host = rootless_host_of(*socket);
    SandboxPolicy policy = policy_from_config(config, 0);
    if (host.rootless) {
      // A rootless service maps the sandbox into its user's subordinate ids
      // (rootless_host.h): whether it can, and which host ids those are.
      auto st = adapt_policy_to_host(host, &policy);
      checks.push_back({"user namespace", st ? "ok" : "fail",
                        st ? describe_mapping(host, policy.userns) : st.error().message,
                        st ? "" : "as root: scripts/setup-rootless.sh " + host.user});
    } else {
      const auto hits = userns_collisions({u.host_id, u.size}, text("/etc/passwd"), text("/etc/group"),
                                          text("/etc/subuid"), text("/etc/subgid"));
      std::string detail = describe_mapping(host, policy.userns);
      for (const auto& h : hits) detail += "; overlaps " + h;
      checks.push_back({"user namespace", hits.empty() ? "ok" : "fail", detail,
                        hits.empty() ? "" : "choose another user_namespace.host_id in the config"});
    }
    // Which limits this service can enforce: root's podman and cgroup v2
    // with the controllers delegated enforce all; rootless on v1 none of
    // memory, pids, cpu (runs are refused unless the weaker policy is accepted).
    std::string gaps;
    for (const auto& g : host.gaps) gaps += (gaps.empty() ? "" : ", ") + g;
    checks.push_back(
        {"limits", host.gaps.empty() ? "ok" : "warn",
         host.gaps.empty()
             ? std::string(host.rootless ? "rootless podman on cgroup v2 with memory, pids and cpu delegated"
                                         : "root's podman") +
                   ": memory, pids and cpu limits enforced"
             : gaps + " not enforced (" + host.gaps_reason +
                   "); nofile/nproc rlimits, tmpfs sizes, timeout and output cap still are",
         host.gaps.empty() ? ""
                           : "runs are refused unless --accept-weaker-policy; for every limit use root's podman, or "
                             "a cgroup v2 host with memory, pids and cpu delegated to user@" +
                                 std::to_string(host.uid) + ".service"});
    if (host.rootless) {  // the planner's (and a set-up's) network: slirp4netns opens /dev/net/tun
      auto net = check_rootless_network(host, "the planner's network");
      checks.push_back({"container network", net ? "ok" : "warn",
                        net ? "/dev/net/tun opens: rootless podman can give the planner and an environment "
                              "set-up their network (slirp4netns)"
                            : net.error().message,
                        net ? "" : "as root: scripts/setup-rootless.sh " + host.user + " (chmod 0666 /dev/net/tun)"});
    }
  }
  const RunStore store = default_run_store();
  auto st = store.ensure();
  checks.push_back({"state", st ? "ok" : "fail", st ? store.dir() : st.error().message,
                    st ? "" : "set XDG_STATE_HOME to a writable directory"});
  return checks;
}

}  // namespace

int cmd_doctor(const std::vector<std::string>& args) {
  bool as_json = false;
  std::string config_path;
  ArgParser p("doctor", "[--config FILE] [--json]",
              "Checks podman's socket and API version, the OCI runtime, every image the config names\n"
              "(images.sandbox, images.planner), the run store and this host's known quirks; prints\n"
              "the fix for each problem, and which config file it read. Exit 0 when nothing failed,\n"
              "5 otherwise.");
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  p.flag("--json", &as_json, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), as_json);
  const auto checks = run_checks(*config, chosen_config_path(config_path));
  bool failed = false;
  json rows = json::array();
  for (const auto& c : checks) {
    failed = failed || c.status == "fail";
    rows.push_back({{"check", c.name}, {"status", c.status}, {"detail", c.detail}, {"fix", c.fix}});
  }
  if (as_json) {
    std::cout << json{{"ok", !failed}, {"config", chosen_config_path(config_path)}, {"checks", rows}}.dump(2)
              << std::endl;
  } else {
    for (const auto& c : checks) {
      std::cout << (c.status == "ok" ? "[ ok ] " : c.status == "warn" ? "[warn] " : "[FAIL] ") << c.name
                << ": " << escape_for_terminal(c.detail) << "\n";
      if (!c.fix.empty()) std::cout << "       fix: " << escape_for_terminal(c.fix) << "\n";
    }
  }
  return failed ? kExitEngine : 0;
}

}  // namespace lazyagent
