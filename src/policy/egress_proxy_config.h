// The egress proxy's configuration and what its log says (issue 31). Pure.
//
// The proxy is squid (images/egress-proxy/Containerfile), the set-up's only
// way out (engine/podman/egress_proxy.h). What its configuration enforces:
//   - a client outside the set-up's internal network (`client_subnet`) is
//     refused (the proxy also sits on the default bridge);
//   - CONNECT (HTTPS and any TLS) only to a listed name and port: squid
//     reads the CONNECT target, resolves the name itself and connects there;
//   - plain HTTP only when the URL's host and port are listed: squid decides
//     by the request URL, never by the Host header (a Host naming a listed
//     host on a URL naming another is refused, and the upstream request goes
//     to the URL's host);
//   - names are compared as written (`dstdomain -n`: an address in a URL is
//     never reverse-resolved into a listed name), and a listed name that
//     resolves to a loopback or unspecified address is refused;
//   - nothing is cached; no X-Forwarded-For header is added (squid keeps Via: HTTP requires it).
// Not enforced: the TLS SNI inside a CONNECT tunnel (it would need squid's
// ssl-bump with a generated CA); the tunnel reaches only the listed name's
// addresses either way, so only a server there (a CDN fronting other sites)
// could route by the SNI to something unlisted.
//
// Each request is logged as one line, "lazyagent-egress TIME STATUS CODE
// METHOD HOST PORT URL" (TIME in seconds with ms, STATUS squid's, e.g.
// TCP_DENIED, TCP_TUNNEL, TCP_MISS), which parse_egress_log reads back.
#pragma once

#include <string>
#include <vector>

#include "contract/egress_entry.h"

namespace lazyagent {

inline constexpr int kEgressProxyPort = 3128;
inline constexpr const char* kEgressProxyConfigPath = "/etc/squid/lazyagent.conf";
inline constexpr const char* kEgressLogMarker = "lazyagent-egress ";
inline constexpr const char* kEgressReadyLine = "lazyagent-egress-ready";

// squid.conf for `entries`, accepting clients from `client_subnet` (CIDR).
std::string squid_config(const std::vector<EgressEntry>& entries, const std::string& client_subnet);

// sh -c text the proxy container runs: `squid -k parse` of the configuration
// (a refusal exits 3 with squid's words), squid in the foreground, a line
// kEgressReadyLine once it listens; on SIGTERM it stops squid, waits for it
// to exit and then prints the whole access log on stdout (exit 0).
std::string egress_proxy_script();

struct EgressRequest {
  double time = 0;      // seconds since the epoch
  std::string status;   // TCP_DENIED, TCP_TUNNEL, ...
  int code = 0;         // HTTP status the proxy answered
  std::string method;   // CONNECT, GET, ...
  std::string host;
  int port = 0;
  std::string url;      // as squid logged it (bounded, printable)
  bool denied() const { return status == "TCP_DENIED"; }
  std::string host_port() const { return host + ":" + std::to_string(port); }
};

// Every request line in `log` (other lines are ignored; fields bounded).
std::vector<EgressRequest> parse_egress_log(const std::string& log);

struct EgressOutcome {
  std::vector<std::string> denied;   // HOST:PORT, first seen first, once each
  std::vector<std::string> reached;  // HOST:PORT and the URLs of plain HTTP, once each
};
EgressOutcome summarize_egress(const std::vector<EgressRequest>& requests);

// What a failed set-up step's error says about the denials: "set-up step 3
// was denied egress to HOST:443, ...: add them to environment.egress", or ""
// without denials.
std::string egress_denial_message(const std::vector<std::string>& denied, std::size_t step);

}  // namespace lazyagent
