// Which podman service runs a sandbox of a given OCI runtime, and the check
// that the service really uses that runtime.
//
// podman 4.3.1 ignores `oci_runtime` in the libpod create request
// (ARCHITECTURE section 5): the runtime is chosen where the service starts.
// So each runtime has its own service, all sharing one image storage:
//   runc, crun
//          CONTAINER_HOST (unix:///path), else /run/podman/podman.sock (root):
//          the service the user has, whichever of the two it runs (crun on
//          Fedora, RHEL, Ubuntu and Debian as installed; runc here). The
//          policy holds the same under both (runtime_policy.h).
//   runsc  $LAZYAGENT_RUNSC_HOST (unix:///path), else the config's
//          engine.runsc_socket (default /run/podman/lazyagent-runsc.sock),
//          started by scripts/setup.sh as
//          podman --runtime runsc --runtime-flag network=none
//                 --runtime-flag ignore-cgroups --runtime-flag oci-seccomp
//                 system service --time=0 unix:///run/podman/lazyagent-runsc.sock
// The planner always runs on the runc service (it needs a network, and
// runsc's service has none).
#pragma once

#include <string>

#include "config.h"
#include "engine/podman/podman_client.h"
#include "store/run_store.h"
#include "util/result.h"

namespace lazyagent {

// The command that starts the runsc service on `socket` (for messages and docs).
std::string runsc_service_command(const std::string& socket);

// The socket for `runtime`. Pure: the caller passes the environment in.
Result<std::string> resolve_runtime_socket(const std::string& runtime, const EngineConfig& engine,
                                           const char* runsc_host, const char* container_host,
                                           unsigned uid, const char* xdg_runtime_dir);

// Which runtime a sandbox runs under, given `requested` ("" = the default
// service's own, runc or crun; else runc, crun or runsc, set by the user)
// and what the service runs. A runtime the policy is not verified under, or
// another than the one requested, is a configuration fact that no retry
// changes: kUsage, naming the service, its runtime and the fix. Pure.
Result<std::string> choose_sandbox_runtime(const std::string& requested, const std::string& service_runtime,
                                           const std::string& socket);

// Pings the service (an error saying what to run when it does not answer)
// and reads its OCI runtime (info host.ociRuntime.name, cached until the
// service restarts: service_facts.h), then choose_sandbox_runtime(). The
// verifier still refuses any container whose OCIRuntime is not the one
// returned, before it starts.
Result<std::string> check_engine_runtime(PodmanClient& podman, const std::string& requested, const RunStore& store);

}  // namespace lazyagent
