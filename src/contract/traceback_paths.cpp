#include "contract/traceback_paths.h"

#include <cctype>
#include <map>
#include <set>

namespace lazyagent {

namespace {

bool path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-' || c == '+' ||
         c == '@';
}

bool ends_with_component(std::string_view s, std::string_view tail) {
  return s.size() > tail.size() && s.substr(s.size() - tail.size()) == tail && s[s.size() - tail.size() - 1] == '/';
}

std::string_view base_name(std::string_view p) {
  const std::size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

struct Location {
  std::string_view path;
};

// Every "path" in `File "path", line` and every path-like token followed by ":<digit>".
std::vector<Location> location_paths(std::string_view out) {
  std::vector<Location> found;
  constexpr std::string_view kFile = "File \"";
  for (std::size_t at = out.find(kFile); at != std::string_view::npos; at = out.find(kFile, at + 1)) {
    const std::size_t from = at + kFile.size();
    const std::size_t end = out.find('"', from);
    if (end == std::string_view::npos || end - from > 4096) continue;
    if (out.substr(end, 8) == "\", line ") found.push_back({out.substr(from, end - from)});
  }
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] != ':' || !std::isdigit(static_cast<unsigned char>(out[i + 1]))) continue;
    std::size_t from = i;
    while (from > 0 && path_char(out[from - 1]) && i - from < 4096) --from;
    const std::string_view token = out.substr(from, i - from);
    if (token.find('.') != std::string_view::npos && !token.empty() && token.back() != '.') found.push_back({token});
  }
  return found;
}

}  // namespace

std::vector<std::string> paths_named_by_output(std::string_view output, const std::vector<std::string>& seed_paths,
                                               std::size_t max) {
  std::map<std::string_view, std::vector<const std::string*>> by_base;
  for (const auto& p : seed_paths) by_base[base_name(p)].push_back(&p);
  std::vector<std::string> out;
  std::set<std::string_view> taken;
  for (const Location& loc : location_paths(output)) {
    std::string_view c = loc.path;
    while (c.substr(0, 2) == "./") c.remove_prefix(2);
    const auto it = by_base.find(base_name(c));
    if (it == by_base.end()) continue;
    for (const std::string* p : it->second) {
      if (out.size() >= max) return out;
      if (taken.count(*p)) continue;
      if (c == *p || ends_with_component(c, *p) || ends_with_component(*p, c)) {
        taken.insert(*p);
        out.push_back(*p);
      }
    }
  }
  return out;
}

}  // namespace lazyagent
