#include "provider/planner_base_url.h"

#include <algorithm>
#include <cctype>

#include "provider/provider_client.h"

namespace lazyagent {

PlannerBaseUrl planner_base_url(const std::string& url, const std::vector<std::string>& gateways) {
  const std::string scheme = "http://";
  std::string head = url.substr(0, scheme.size());
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  if (head != scheme) return {url, ""};  // https: its certificate names the host as given
  const std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) return {url, ""};  // validate_base_url refuses it
  std::string host = authority, port;
  if (!authority.empty() && authority[0] == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return {url, ""};
    host = authority.substr(0, close + 1);
    port = authority.substr(close + 1);  // ":PORT" or ""
  } else if (const std::size_t colon = authority.find(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon);
  }
  const bool gateway = std::find(gateways.begin(), gateways.end(), host) != gateways.end();
  if (!gateway && !is_loopback_host(host)) return {url, ""};
  PlannerBaseUrl out;
  out.url = scheme + kContainerHostName + port + path;
  out.note = gateway ? host + " is this machine on podman's network; the planner container names it " +
                           std::string(kContainerHostName) + ": stored as " + out.url
                     : "the planner runs in a container, where " + host + " is the container itself, not this machine: "
                       "stored as " + out.url + " (this machine as the planner sees it); the server must listen on "
                       "podman's gateway address" + (gateways.empty() ? std::string() : " (" + gateways[0] + ")") +
                       " or on 0.0.0.0, not only on " + host;
  return out;
}

std::string provider_origin(const std::string& url) {
  std::string lower = url;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string port;
  std::size_t from = 0;
  if (lower.rfind("http://", 0) == 0) {
    port = "80";
    from = 7;
  } else if (lower.rfind("https://", 0) == 0) {
    port = "443";
    from = 8;
  } else {
    return "";
  }
  std::string authority = lower.substr(from, lower.find_first_of("/?#", from) - from);
  if (const std::size_t at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  std::string host = authority;
  const std::size_t close = authority.rfind(']');
  const std::size_t colon = authority.rfind(':');
  if (colon != std::string::npos && (close == std::string::npos || colon > close)) {
    host = authority.substr(0, colon);
    if (colon + 1 < authority.size()) port = authority.substr(colon + 1);
  }
  if (host.empty()) return "";
  return host + ":" + port;
}

}  // namespace lazyagent
