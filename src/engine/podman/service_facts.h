// What only a podman service's GET /info tells: its cgroup manager and its
// OCI runtime. That call inspects podman's storage and takes 0.7 s here, the
// most expensive call a run could make (a cold `test` once paid it in its copy
// step). The answers change only when the service restarts, and a restarted
// service makes its socket anew, so they are kept in the state directory,
//   services/<sha256(socket path)[:32]>.json  {"identity", "cgroup_manager", "oci_runtime"}
// under the socket's identity (path, device, inode, change time), and asked
// again only when that identity differs. A socket that cannot be stat'ed (not
// on this host's file system) is asked every time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/podman/podman_client.h"
#include "store/run_store.h"
#include "util/result.h"

namespace lazyagent {

struct ServiceFacts {
  std::string cgroup_manager;  // "cgroupfs", "systemd"
  std::string oci_runtime;     // "runc", "runsc", ...
  bool cached = false;         // read from the state directory, not asked
};

// The socket file's identity, null when it cannot be stat'ed. Effectful (stat).
nlohmann::json socket_identity(const std::string& socket_path);

// The facts from the cache when the socket's identity matches, else asked
// (GET /info) and cached. A cache that cannot be written costs the next
// process the same call, nothing else.
Result<ServiceFacts> service_facts(PodmanClient& podman, const RunStore& store);

}  // namespace lazyagent
