#include "cli/mcp_args.h"

#include <climits>
#include <cstdlib>

namespace lazyagent {

namespace {

std::string mcp_real_dir(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

}  // namespace

Result<std::string> check_mcp_seed(const std::string& tool, const std::string& seed, const std::vector<std::string>& allowed) {
  if (allowed.empty()) {
    return usage_error(tool + ": seed '" + seed + "' refused: the server's config lists no mcp.seeds, so every seed is "
                       "refused (add the directories clients may use to mcp.seeds)");
  }
  const std::string real = mcp_real_dir(seed);
  if (real.empty()) return usage_error(tool + ": seed '" + seed + "' refused: no such directory");
  std::string list;
  for (const auto& a : allowed) {
    const std::string base = mcp_real_dir(a);
    list += (list.empty() ? "" : ", ") + a;
    if (base.empty()) continue;
    if (real == base || (real.size() > base.size() && real.compare(0, base.size(), base) == 0 &&
                         (base == "/" || real[base.size()] == '/'))) {
      return real;
    }
  }
  return usage_error(tool + ": seed '" + seed + "' refused: it is not under a directory the server's mcp.seeds lists (" +
                     list + ")");
}


}  // namespace lazyagent
