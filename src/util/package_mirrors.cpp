#include "util/package_mirrors.h"

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lazyagent {

namespace {

// "http://HOST[:port]/path" -> "HOST" ("" for other schemes).
std::string uri_host(const std::string& uri) {
  std::string rest;
  for (const char* scheme : {"http://", "https://"}) {
    if (uri.rfind(scheme, 0) == 0) rest = uri.substr(std::string(scheme).size());
  }
  if (rest.empty()) return "";
  rest = rest.substr(0, rest.find('/'));
  if (const auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.find(':'));
}

void add(std::vector<std::string>* out, const std::string& host) {
  if (!host.empty() && std::find(out->begin(), out->end(), host) == out->end()) out->push_back(host);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<std::string> hosts_in_apt_sources(const std::string& text, bool deb822) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  if (!deb822) {
    while (std::getline(in, line)) {
      std::istringstream words(line.substr(0, line.find('#')));
      std::string type, w;
      if (!(words >> type) || (type != "deb" && type != "deb-src")) continue;
      while (words >> w) {
        if (w[0] == '[') {
          while (w.back() != ']' && words >> w) {
          }
          continue;
        }
        add(&out, uri_host(w));
        break;
      }
    }
    return out;
  }
  // deb822: stanzas separated by blank lines; a stanza may say Enabled: no.
  std::vector<std::string> stanza;
  bool enabled = true;
  auto flush = [&] {
    if (enabled) {
      for (const auto& h : stanza) add(&out, h);
    }
    stanza.clear();
    enabled = true;
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '#') continue;
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      flush();
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::istringstream value(line.substr(colon + 1));
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    std::string w;
    if (key == "uris") {
      while (value >> w) stanza.push_back(uri_host(w));
    } else if (key == "enabled" && value >> w) {
      enabled = w != "no" && w != "false";
    }
  }
  flush();
  return out;
}

std::vector<std::string> apt_source_hosts(const std::string& apt_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& h : hosts_in_apt_sources(read_text(apt_dir + "/sources.list"), false)) add(&out, h);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(apt_dir + "/sources.list.d", ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string ext = f.extension().string();
    if (ext != ".list" && ext != ".sources") continue;
    for (const auto& h : hosts_in_apt_sources(read_text(f), ext == ".sources")) add(&out, h);
  }
  return out;
}

std::vector<std::string> package_mirror_probe_targets(const std::string& apt_dir) {
  const auto hosts = apt_source_hosts(apt_dir);
  if (hosts.empty()) return {};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(hosts[0].c_str(), nullptr, &hints, &res) != 0) return {};
  std::vector<std::string> addrs;
  for (addrinfo* a = res; a != nullptr && addrs.size() < 2; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* src = a->ai_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
                                               : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
    if (::inet_ntop(a->ai_family, src, buf, sizeof buf) == nullptr) continue;
    const std::string ip = a->ai_family == AF_INET6 ? "[" + std::string(buf) + "]" : buf;
    if (std::find(addrs.begin(), addrs.end(), ip) == addrs.end()) addrs.push_back(ip);
  }
  ::freeaddrinfo(res);
  std::vector<std::string> out = {"lookup=" + hosts[0]};
  for (const auto& ip : addrs) {
    out.push_back("external=" + ip + ":80");
    out.push_back("external=" + ip + ":443");
  }
  return out;
}

}  // namespace lazyagent

#include <ifaddrs.h>
#include <netinet/in.h>

namespace lazyagent {

std::vector<std::string> host_probe_targets() {
  std::vector<std::string> addrs;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const in_addr a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &a, buf, sizeof buf) != nullptr) addrs.push_back(buf);
  }
  ::freeifaddrs(list);
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  std::vector<std::string> out;
  for (const auto& a : addrs) {
    for (const char* port : {"22", "80", "443"}) out.push_back("host=" + a + ":" + port);
  }
  return out;
}

}  // namespace lazyagent
