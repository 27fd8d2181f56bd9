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
  if (runtime == kRuntimeRunc) return resolve_podman_socket(container_host, uid, xdg_runtime_dir);
  if (runtime != kRuntimeRunsc) {
    return usage_error("unknown OCI runtime '" + runtime + "' (expected runc or runsc)");
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

Status check_engine_runtime(PodmanClient& podman, const std::string& runtime, const RunStore& store) {
  const std::string& sock = podman.socket_path();
  if (auto v = podman.ping(); !v) {
    if (runtime == kRuntimeRunsc) {
      return v.error().context("the podman service for runsc does not answer on " + sock +
                               " (run scripts/setup.sh, or start it: " + runsc_service_command(sock) + ")");
    }
    return v.error();
  }
  // GET /info costs 0.7 s of the service's time per call (it inspects the
  // storage). The default runc service is not asked: the verifier checks every
  // container's OCIRuntime before it starts (policy_verifier.h), so a wrong
  // service still never runs a test. The runsc service is its own, easy to
  // misconfigure: its runtime is checked, asked once per service start
  // (service_facts.h).
  if (runtime != kRuntimeRunsc) return ok_status();
  auto facts = service_facts(podman, store);
  if (!facts) return facts.error();
  const std::string& name = facts->oci_runtime;
  if (name != runtime) {
    std::string hint = runtime == kRuntimeRunsc
                           ? "point LAZYAGENT_RUNSC_HOST or engine.runsc_socket at a service started with: " +
                                 runsc_service_command(sock)
                           : "point CONTAINER_HOST at a podman service started with --runtime runc";
    return engine_error("the podman service on " + sock + " runs OCI runtime '" + name + "', not '" + runtime +
                        "'; " + hint);
  }
  return ok_status();
}

}  // namespace lazyagent
