// Which podman service runs a sandbox of a given OCI runtime, and the check
// that the service really uses that runtime.
//
// podman 4.3.1 ignores `oci_runtime` in the libpod create request
// (ARCHITECTURE section 5): the runtime is chosen where the service starts.
// So each runtime has its own service, all sharing one image storage:
//   runc   CONTAINER_HOST (unix:///path), else /run/podman/podman.sock (root)
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

// Pings the service and reads its OCI runtime (info host.ociRuntime.name):
// an error saying what to run when it does not answer, and (for runsc) an
// error when it runs another runtime than `runtime`. For runc the runtime is
// not asked here: the verifier refuses any container whose OCIRuntime is not
// the one its result names, before it starts; runsc's answer is cached in the
// store's state directory until the service restarts (service_facts.h).
Status check_engine_runtime(PodmanClient& podman, const std::string& runtime, const RunStore& store);

}  // namespace lazyagent
