#include "contract/egress_entry.h"

#include <algorithm>
#include <cctype>

namespace lazyagent {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "" or why `name` is not a DNS name we accept; `labels` gets its label count.
std::string name_problem(const std::string& name, std::size_t* labels) {
  if (name.empty()) return "no host name";
  if (name.size() > 253) return "a host name longer than 253 characters";
  *labels = 0;
  std::size_t start = 0;
  bool all_numeric_last = false;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string label = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty()) return "an empty label in '" + name + "'";
    if (label.size() > 63) return "a label longer than 63 characters";
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
        if (c == '*') return "a wildcard is allowed only as a leading '*.'";
        return std::string("the character '") + (std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : "?") +
               "' (a host name has letters, digits, '-' and '.')";
      }
    }
    if (label.front() == '-' || label.back() == '-') return "a label starting or ending with '-'";
    ++*labels;
    all_numeric_last = label.find_first_not_of("0123456789") == std::string::npos;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (all_numeric_last) return "an IP address (list host names: the proxy decides by name)";
  return "";
}

}  // namespace

std::string EgressEntry::text() const {
  return (wildcard ? "*." : "") + host + (port != 0 ? ":" + std::to_string(port) : "");
}

std::vector<int> EgressEntry::ports() const { return port != 0 ? std::vector<int>{port} : std::vector<int>{80, 443}; }

std::string egress_entry_problem(const std::string& text) {
  if (text.empty()) return "an empty entry";
  if (text.find("://") != std::string::npos || text.find('/') != std::string::npos)
    return "a URL or a path (list the host name, optionally :PORT)";
  if (text.front() == '[' || std::count(text.begin(), text.end(), ':') > 1)
    return "an IP address (list host names: the proxy decides by name)";
  std::string host = text;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stol(port) < 1 || std::stol(port) > 65535)
      return "the port '" + port + "' (a number from 1 to 65535)";
  }
  bool wildcard = false;
  if (host.rfind("*.", 0) == 0) {
    wildcard = true;
    host = host.substr(2);
  }
  std::size_t labels = 0;
  if (std::string why = name_problem(host, &labels); !why.empty()) return why;
  if (wildcard && labels < 2) return "'*." + host + "' is too broad (a wildcard needs a domain of two labels at least)";
  return "";
}

EgressEntry parse_egress_entry(const std::string& text) {
  EgressEntry e;
  std::string host = text;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    e.port = std::stoi(text.substr(colon + 1));
  }
  if (host.rfind("*.", 0) == 0) {
    e.wildcard = true;
    host = host.substr(2);
  }
  e.host = lower(host);
  return e;
}

bool egress_allows(const std::vector<EgressEntry>& entries, const std::string& host, int port) {
  const std::string h = lower(host);
  for (const auto& e : entries) {
    const bool name_ok = h == e.host || (e.wildcard && h.size() > e.host.size() &&
                                         h.compare(h.size() - e.host.size(), e.host.size(), e.host) == 0 &&
                                         h[h.size() - e.host.size() - 1] == '.');
    const auto ports = e.ports();
    if (name_ok && std::find(ports.begin(), ports.end(), port) != ports.end()) return true;
  }
  return false;
}

}  // namespace lazyagent
