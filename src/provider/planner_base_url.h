// The provider's base URL as the planner container must name this machine.
//
// The planner runs in a container on podman's bridge network: there,
// 127.0.0.1, localhost and [::1] are the container itself, so a local model
// server given as http://127.0.0.1:PORT/v1 fails every run with "connection
// refused". This machine is host.containers.internal inside the container
// (podman's name for the bridge's gateway, `podman network inspect podman`:
// e.g. 10.88.0.1), which validate_base_url (provider_client.h) accepts for
// plain http, while the gateway's bare address is "not local" to it (a
// container's view of an address cannot be judged from the URL alone).
// `configure` therefore stores a plain-http URL whose host is a loopback
// name or one of the gateway addresses it was given as
// http://host.containers.internal:PORT/PATH, and says so: the server must
// then listen on the gateway's address (or 0.0.0.0), not only on 127.0.0.1.
#pragma once

#include <string>
#include <vector>

namespace lazyagent {

inline constexpr const char* kContainerHostName = "host.containers.internal";

struct PlannerBaseUrl {
  std::string url;   // what to store
  std::string note;  // why it differs from what was given; "" when it does not
};

// The label `configure` puts on the base URL's secret: the URL's HOST:PORT
// (the port from the scheme when none is written), what a planner with
// provider.network: allowlist may reach (engine/podman/podman_planner.h).
// The rest of the URL (path, query) stays in the secret only.
inline constexpr const char* kProviderOriginLabel = "io.lazyagent.provider.origin";

// HOST:PORT of an http(s) URL, the host in lower case ("" when the URL has
// no host after "http://" or "https://").
std::string provider_origin(const std::string& url);

// `url` as given, or rewritten to host.containers.internal as above.
// `gateways`: the podman network's gateway addresses (this machine).
PlannerBaseUrl planner_base_url(const std::string& url, const std::vector<std::string>& gateways);

}  // namespace lazyagent
