// The planner on podman with provider.network: allowlist (issue 31 item 4):
// the planner container reaches the provider's HOST:PORT and nothing else,
// by the set-up's mechanism (egress_proxy.h): an internal network of its
// own, squid on it listing that one entry, the proxy variables, DNS at
// nothing, IPv6 off. The provider's HOST:PORT is the label `configure` puts
// on the base URL's secret (kProviderOriginLabel): the URL itself stays in
// the secret, which only the planner reads.
//
// Before its first request the planner probes its own egress
// (provider/proxy_egress_probe.h: direct connections to this machine's
// addresses must fail, the proxy must refuse an unlisted name) and refuses
// to call the provider when it finds a way out; its verdict is the run's
// `planner_egress` ("enforced" or "not enforced" with the findings).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/podman/egress_proxy.h"
#include "util/result.h"

namespace lazyagent {

class PodmanClient;

// The provider's HOST:PORT from the label on `base_url_secret`; a usage
// error saying what to do when the secret has none (stored by an older
// `configure`) or it is not a name the proxy can list (an IP address).
Result<std::string> planner_allowlist_origin(PodmanClient& podman, const std::string& base_url_secret);

// Starts the planner's proxy for `origin` (named `name`, with `labels`)
// and rewrites the planner's create request `spec` onto its network, with
// the probe's arguments on the planner's command line.
Result<std::unique_ptr<EgressProxy>> attach_planner_allowlist(PodmanClient& podman, const std::string& origin,
                                                              const std::string& name,
                                                              const std::map<std::string, std::string>& labels,
                                                              nlohmann::json* spec);

}  // namespace lazyagent
