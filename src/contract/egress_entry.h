// One entry of an egress allow-list (config `environment.egress`, issue 31):
// what a set-up may reach through the egress proxy (engine/podman/egress_proxy.h).
//
//   HOST        a DNS name: ports 80 and 443
//   HOST:PORT   that port only (1-65535)
//   *.DOMAIN    DOMAIN and every name below it (a leading "*." only; DOMAIN
//               needs two labels at least: "*.org" is refused as too broad)
//
// Names only: letters, digits and '-' per label (1-63 characters, no '-' at
// either end), at most 253 characters, compared in lower case. An IP
// address is refused: the proxy decides by name (it resolves the name
// itself), and an address would bypass that. Pure.
#pragma once

#include <string>
#include <vector>

namespace lazyagent {

struct EgressEntry {
  std::string host;        // lower case, without the "*."
  bool wildcard = false;   // "*.host": host and every name below it
  int port = 0;            // 0: 80 and 443
  std::string text() const;  // as written back: "*.host:port"
  std::vector<int> ports() const;
};

// "" when `text` is a valid entry, else why not (for an error naming the key).
std::string egress_entry_problem(const std::string& text);

// The entry of a valid `text` (egress_entry_problem(text) == "").
EgressEntry parse_egress_entry(const std::string& text);

// Whether `host` (a name, lower case) on `port` is allowed by `entries`.
bool egress_allows(const std::vector<EgressEntry>& entries, const std::string& host, int port);

}  // namespace lazyagent
