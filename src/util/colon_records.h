// The ':'-separated fields of each line of /etc/passwd, /etc/group,
// /etc/subuid or /etc/subgid text; empty and '#' lines left out. Pure. Read
// by the sandbox's id-collision scan (sandbox_policy.h) and the rootless
// service's subordinate range (engine/podman/rootless_host.h).
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace lazyagent {

inline std::vector<std::vector<std::string>> colon_records(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream l(line);
    for (std::string x; std::getline(l, x, ':');) f.push_back(x);
    if (f.empty() || f[0].empty() || f[0][0] == '#') continue;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace lazyagent
