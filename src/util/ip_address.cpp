#include "util/ip_address.h"

#include <arpa/inet.h>

namespace lazyagent {

bool split_host_port(const std::string& hp, std::string* host, std::string* port) {
  const auto colon = hp.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = hp.substr(0, colon);
  *port = hp.substr(colon + 1);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return !port->empty();
}

bool is_ipv4_address(const std::string& host) {
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1;
}

bool is_ipv6_address(const std::string& host) {
  in6_addr a{};
  return inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

bool is_host_port(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = s.substr(0, colon);
  const std::string port = s.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return false;
  } else if (host.empty() || host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
                                 std::string::npos) {
    return false;
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
  const long n = std::stol(port);
  return n >= 1 && n <= 65535;
}

}  // namespace lazyagent
