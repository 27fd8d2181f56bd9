// The egress allow-list on podman (issue 31): a set-up (or a planner) that
// may reach only what a list names gets
//   - its own podman network created `internal` (no gateway on the host, no
//     route out, no DNS: measured on podman 4.3.1 with CNI, the host's end
//     of such a bridge has no IPv4 address and a container on it has only
//     its subnet's route), removed afterwards;
//   - a proxy container (squid, localhost/lazyagent-egress-proxy,
//     images/egress-proxy/Containerfile) on that network and on the default
//     bridge, configured from the list (policy/egress_proxy_config.h) and
//     checked with `squid -k parse` before it starts, with IP forwarding off;
//   - for the client: that network only, IPv6 off (the host's end of the
//     bridge has a link-local IPv6 address, reachable otherwise: measured),
//     DNS pointed at 127.0.0.1 (nothing answers: names resolve only on the
//     proxy's side), and http_proxy/https_proxy/no_proxy (upper case too)
//     naming the proxy's address on the internal network.
// What the proxy let through and refused is read from its log (requests()).
// The network and the proxy container are owned by an EgressProxy object and
// removed when it goes (STYLE.md principle 13).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/egress_entry.h"
#include "policy/egress_proxy_config.h"
#include "util/result.h"

namespace lazyagent {

class PodmanClient;

inline constexpr const char* kEgressProxyImage = "localhost/lazyagent-egress-proxy:latest";

// The client's proxy variables for a proxy at `address` (an IPv4 address). Pure.
std::map<std::string, std::string> egress_proxy_env(const std::string& address);

// Sets a client container's create request onto `network` behind the proxy:
// netns bridge on that network only, IPv6 off, DNS 127.0.0.1 and the proxy
// variables added to its env. Pure.
void attach_to_egress_network(nlohmann::json* spec, const std::string& network, const std::string& proxy_address);

class EgressProxy {
 public:
  // Creates the network `name` and the proxy container `name`-proxy (from
  // `image`, carrying `labels`), uploads its configuration, starts it and
  // waits (at most 20 s) until it listens. A configuration squid refuses is
  // an error with squid's words.
  static Result<std::unique_ptr<EgressProxy>> start(PodmanClient& podman, const std::vector<EgressEntry>& entries,
                                                    const std::string& name, const std::string& image,
                                                    const std::map<std::string, std::string>& labels);
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  const std::string& network() const { return network_; }
  const std::string& address() const { return address_; }  // the proxy's address on network()
  const std::string& container() const { return container_; }

  // Stops the proxy (squid shuts down, logging what was still open) and
  // returns every request it logged. Call once, after the client exited.
  Result<std::vector<EgressRequest>> requests();
  // Removes the proxy container and the network now.
  Status remove();

 private:
  explicit EgressProxy(PodmanClient& podman) : podman_(podman) {}
  PodmanClient& podman_;
  std::string network_;
  std::string container_;
  std::string address_;
};

}  // namespace lazyagent
