#include "engine/podman/runtime_engine.h"

#include "engine/podman/service_facts.h"
#include "policy/runtime_policy.h"

namespace lazyagent {

std::string runsc_service_command(const std::string& socket) {
  return "(cd / && setsid podman --runtime runsc --runtime-flag network=none --runtime-flag ignore-cgroups "
         "--runtime-flag oci-seccomp system service --time=0 unix://" + socket + " &)";
}

Result<std::string> resolve_runtime_socket(const std::string& runtime, const EngineConfig& engine,
                                           const char* runsc_host, const char* container_host,
                                           unsigned uid, const char* xdg_runtime_dir) {
  if (runtime == kRuntimeRunc || runtime == kRuntimeCrun) {
    return resolve_podman_socket(container_host, uid, xdg_runtime_dir);
  }
  if (runtime != kRuntimeRunsc) {
    return usage_error("unknown OCI runtime '" + runtime + "' (expected runc, crun or runsc)");
  }
  if (runsc_host != nullptr && *runsc_host != '\0') {
    const std::string v = runsc_host;
    const std::string prefix = "unix://";
    if (v.rfind(prefix, 0) != 0 || v.size() <= prefix.size() || v[prefix.size()] != '/') {
      return usage_error("LAZYAGENT_RUNSC_HOST=" + v + ": expected unix:///absolute/path");
    }
    return v.substr(prefix.size());
  }
  return engine.runsc_socket;
}

Result<std::string> choose_sandbox_runtime(const std::string& requested, const std::string& service_runtime,
                                           const std::string& socket) {
  const std::string said = "the podman service on " + socket + " runs OCI runtime '" + service_runtime + "'";
  if (requested == kRuntimeRunsc) {
    if (service_runtime == kRuntimeRunsc) return service_runtime;
    return usage_error(said + ", not 'runsc': point LAZYAGENT_RUNSC_HOST or engine.runsc_socket at a service "
                       "started with: " + runsc_service_command(socket));
  }
  const bool usable = service_runtime == kRuntimeRunc || service_runtime == kRuntimeCrun;
  if (!usable) {
    return usage_error(said + (service_runtime.empty() ? " (it names none)" : "") +
                       ", which the sandbox policy is not verified under (runc or crun on this service, gVisor on "
                       "its own through engine.runtime: runsc): restart the service with `podman --runtime crun "
                       "system service ...` or set [engine] runtime in containers.conf");
  }
  if (requested.empty() || requested == service_runtime) return service_runtime;
  return usage_error(said + ", not '" + requested + "' (engine.runtime or --runtime): drop the setting to use the "
                     "service's runtime (the policy holds under runc and crun alike), or point CONTAINER_HOST at a "
                     "podman service started with --runtime " + requested);
}

Result<std::string> check_engine_runtime(PodmanClient& podman, const std::string& requested, const RunStore& store) {
  const std::string& sock = podman.socket_path();
  if (auto v = podman.ping(); !v) {
    if (requested == kRuntimeRunsc) {
      return v.error().context("the podman service for runsc does not answer on " + sock +
                               " (run scripts/setup.sh, or start it: " + runsc_service_command(sock) + ")");
    }
    return v.error();
  }
  // GET /info costs 0.7 s of the service's time; its answer is kept until the
  // service restarts (service_facts.h), and the cgroup manager comes with it.
  auto facts = service_facts(podman, store);
  if (!facts) return facts.error();
  return choose_sandbox_runtime(requested, facts->oci_runtime, sock);
}

}  // namespace lazyagent
