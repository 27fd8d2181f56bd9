#include "engine/podman/planner_allowlist.h"

#include <algorithm>

#include "contract/egress_entry.h"
#include "engine/podman/podman_client.h"
#include "provider/planner_base_url.h"
#include "util/package_mirrors.h"

namespace lazyagent {

using nlohmann::json;

Result<std::string> planner_allowlist_origin(PodmanClient& podman, const std::string& base_url_secret) {
  auto labels = podman.secret_labels(base_url_secret);
  if (!labels) return labels.error().context("provider.network: allowlist");
  const auto it = labels->find(kProviderOriginLabel);
  if (it == labels->end() || it->second.empty()) {
    return usage_error("provider.network: allowlist: podman secret " + base_url_secret +
                       " does not say which HOST:PORT the provider is on (stored by an older `configure`): run "
                       "`lazyagent-oci configure` again, or set provider.network: bridge");
  }
  if (const std::string why = egress_entry_problem(it->second); !why.empty()) {
    return usage_error("provider.network: allowlist: the provider's base URL names " + it->second + " (" + why +
                       "): the allow-list proxy decides by host name, so give the provider's URL a name, or set "
                       "provider.network: bridge");
  }
  return it->second;
}

Result<std::unique_ptr<EgressProxy>> attach_planner_allowlist(PodmanClient& podman, const std::string& origin,
                                                              const std::string& name,
                                                              const std::map<std::string, std::string>& labels,
                                                              json* spec) {
  const EgressEntry entry = parse_egress_entry(origin);
  auto proxy = EgressProxy::start(podman, {entry}, name, kEgressProxyImage, labels);
  if (!proxy) return proxy.error().context("provider.network: allowlist: the planner's proxy");
  attach_to_egress_network(spec, (*proxy)->network(), (*proxy)->address());
  // What the planner's probe tries directly: this machine on 22, 80, 443
  // and on the provider's port (host.containers.internal is the gateway).
  std::vector<std::string> targets = host_probe_targets();
  const std::string port = std::to_string(entry.ports().front());
  if (port != "22" && port != "80" && port != "443") {
    std::vector<std::string> more;
    for (const auto& t : targets) {
      const std::string addr = t.substr(t.find('=') + 1, t.rfind(':') - t.find('=') - 1);
      const std::string target = "host=" + addr + ":" + port;
      if (std::find(more.begin(), more.end(), target) == more.end()) more.push_back(target);
    }
    targets.insert(targets.end(), more.begin(), more.end());
  }
  std::string joined;
  for (const auto& t : targets) joined += (joined.empty() ? "" : " ") + t;
  for (const std::string& arg :
       {std::string("--egress-proxy"), (*proxy)->address() + ":" + std::to_string(kEgressProxyPort),
        std::string("--egress-targets"), joined, std::string("--egress-allow"), origin,
        std::string("--egress-required")}) {
    (*spec)["command"].push_back(arg);
  }
  return proxy;
}

}  // namespace lazyagent
