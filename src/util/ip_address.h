// HOST:PORT text and IP address literals, for the settings that name an
// address (k8s.planner_egress) and the NetworkPolicy rules built from them.
#pragma once

#include <string>

namespace lazyagent {

// HOST:PORT -> {host without brackets, port}; false when not that shape.
bool split_host_port(const std::string& hp, std::string* host, std::string* port);

// HOST:PORT as text: a name or IPv4 address, or an IPv6 address in
// brackets; port 1-65535 (not resolved).
bool is_host_port(const std::string& s);

bool is_ipv4_address(const std::string& host);
bool is_ipv6_address(const std::string& host);  // without brackets

}  // namespace lazyagent
