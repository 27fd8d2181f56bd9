#include "contract/planner_snapshot.h"

namespace lazyagent {

std::vector<TarEntry> planner_snapshot(const SeedSnapshot& seed, const std::string& prefix, std::size_t max_file,
                                       std::size_t max_total, std::vector<std::string>* left_out) {
  std::vector<TarEntry> out;
  const std::string under = prefix.empty() ? "" : prefix + "/";
  if (!prefix.empty()) out.push_back({prefix, "", 0755, true});
  std::size_t used = 0;
  for (const auto& e : seed.entries) {
    if (e.kind == SeedEntry::Kind::kDir) {
      out.push_back({under + e.path, "", 0755, true});
      continue;
    }
    if (e.kind != SeedEntry::Kind::kFile) continue;
    auto content = e.size > max_file || used + e.size > max_total
                       ? Result<std::string>(usage_error("over the budget"))
                       : read_seed_file(seed, e, max_file);
    if (!content) {
      if (left_out) left_out->push_back(e.path);
      continue;
    }
    used += content->size();
    out.push_back({under + e.path, std::move(*content), 0444, false});
  }
  return out;
}

}  // namespace lazyagent
