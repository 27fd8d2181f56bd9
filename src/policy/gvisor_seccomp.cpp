#include "policy/gvisor_seccomp.h"

#include <algorithm>

namespace lazyagent {

using nlohmann::json;

namespace {

constexpr int kEnosys = 38;

bool names_contain(const json& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A rule that answers clone3, and only by its name, with ENOSYS.
bool is_clone3_enosys_rule(const json& rule) {
  return rule.value("action", std::string()) == "SCMP_ACT_ERRNO" && rule.value("errnoRet", 0) == kEnosys &&
         (!rule.contains("args") || rule["args"].empty()) && rule.contains("names") &&
         names_contain(rule["names"], "clone3");
}

}  // namespace

const std::map<std::string, std::string>& gvisor_syscall_names() {
  static const std::map<std::string, std::string> names = {{"pselect6", "pselect"}};
  return names;
}

json gvisor_seccomp_profile(const json& profile) {
  json out = profile;
  if (!out.contains("syscalls") || !out["syscalls"].is_array()) return out;
  json rules = json::array();
  bool clone3_moved = false;
  for (json rule : out["syscalls"]) {
    if (rule.contains("names") && rule["names"].is_array()) {
      for (const auto& [linux_name, gvisor_name] : gvisor_syscall_names()) {
        if (names_contain(rule["names"], linux_name) && !names_contain(rule["names"], gvisor_name)) {
          rule["names"].push_back(gvisor_name);
        }
      }
      if (is_clone3_enosys_rule(rule)) {
        auto& names = rule["names"];
        names.erase(std::remove(names.begin(), names.end(), "clone3"), names.end());
        clone3_moved = true;
        if (names.empty()) continue;
      }
    }
    rules.push_back(std::move(rule));
  }
  if (clone3_moved) rules.push_back(json{{"names", {"clone3"}}, {"action", "SCMP_ACT_ALLOW"}});
  out["syscalls"] = std::move(rules);
  return out;
}

}  // namespace lazyagent
