// What the sandbox's egress probe aims at on Kubernetes: the API server,
// the `kubernetes` Service and the config's targets, names resolved.
#include "engine/k8s/k8s_engine.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "util/base64.h"
#include "policy/isolation_probe.h"
#include "store/ownership.h"
#include "policy/planner_egress.h"
#include "policy/planner_policy.h"
#include "store/store_sweep.h"
#include "policy/sandbox_policy.h"


namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// HOST:PORT (IPv6 in brackets) -> the addresses HOST resolves to, each
// "ADDR:PORT" / "[ADDR]:PORT", loopback dropped.
std::vector<std::string> resolve_host_port(const std::string& hp) {
  const auto colon = hp.rfind(':');
  if (colon == std::string::npos) return {};
  std::string host = hp.substr(0, colon);
  const std::string port = hp.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return {};
  std::vector<std::string> out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    std::string addr;
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
      addr = inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) continue;
      addr = "[" + std::string(inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf)) + "]";
    } else {
      continue;
    }
    const std::string t = addr + ":" + port;
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

std::vector<std::string> k8s_egress_targets(const std::string& server_url, const std::string& api_service,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  auto add = [&](const char* label, const std::string& hp) {
    for (const auto& t : resolve_host_port(hp)) {
      const std::string entry = std::string(label) + "=" + t;
      if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(entry);
    }
  };
  // https://HOST[:PORT][/path]
  std::string rest = server_url.substr(server_url.find("://") == std::string::npos ? 0 : server_url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  const bool bracketed = !rest.empty() && rest.front() == '[';
  const auto close = bracketed ? rest.find(']') : std::string::npos;
  const auto colon = rest.rfind(':');
  const bool has_port = colon != std::string::npos && (!bracketed || colon > close);
  if (!rest.empty()) add("api", has_port ? rest : rest + ":443");
  if (!api_service.empty()) add("api-service", api_service);
  for (const auto& e : extra) add("config", e);
  return out;
}

}  // namespace lazyagent
