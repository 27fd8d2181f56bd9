// The argument checking the MCP server's tools share (cmd_mcp.cpp,
// mcp_session_tools.cpp): every problem of one call's arguments, and the
// seed check against the server's mcp.seeds.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace lazyagent {

// The argument problems of one call, all of them (STYLE.md principle 6).
class McpArgs {
 public:
  McpArgs(std::string tool, const nlohmann::json& args, std::vector<std::string> known)
      : tool_(std::move(tool)), args_(args) {
    for (const auto& [k, v] : args.items()) {
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        std::string list;
        for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
        problems_.push_back("arguments." + k + ": unknown argument (known: " + list + ")");
      }
    }
  }
  // Appends "FLAG VALUE" to argv when the argument is there and a string.
  void string(const char* key, const char* flag, std::vector<std::string>* argv, bool required = false) {
    if (!args_.contains(key)) {
      if (required) problems_.push_back(std::string("arguments.") + key + ": required");
      return;
    }
    if (!args_[key].is_string()) return wrong(key, "a string");
    argv->push_back(flag);
    argv->push_back(args_[key]);
  }
  void integer(const char* key, const char* flag, std::vector<std::string>* argv) {
    if (!args_.contains(key)) return;
    if (!args_[key].is_number_integer()) return wrong(key, "an integer");
    argv->push_back(flag);
    argv->push_back(std::to_string(args_[key].get<long long>()));
  }
  void strings(const char* key, const char* flag, std::vector<std::string>* argv) {
    if (!args_.contains(key)) return;
    if (!args_[key].is_array()) return wrong(key, "a list of strings");
    for (const auto& v : args_[key]) {
      if (!v.is_string()) return wrong(key, "a list of strings");
      argv->push_back(flag);
      argv->push_back(v);
    }
  }
  // A boolean that, when false, adds `flag_if_false`.
  void boolean(const char* key, const char* flag_if_false, std::vector<std::string>* argv) {
    if (!args_.contains(key)) return;
    if (!args_[key].is_boolean()) return wrong(key, "true or false");
    if (!args_[key].get<bool>()) argv->push_back(flag_if_false);
  }
  void problem(std::string p) { problems_.push_back(std::move(p)); }
  Status status() const {
    if (problems_.empty()) return ok_status();
    std::string all;
    for (const auto& p : problems_) all += (all.empty() ? "" : "; ") + p;
    return usage_error(tool_ + ": " + all);
  }

 private:
  void wrong(const char* key, const char* want) {
    problems_.push_back(std::string("arguments.") + key + ": expected " + want + ", got " + args_[key].dump());
  }
  std::string tool_;
  const nlohmann::json& args_;
  std::vector<std::string> problems_;
};

// The seed a client named must be one of mcp.seeds or under one (both
// resolved, symlinks included, so `..` and links cannot step outside).
// Returns the resolved path, which the run then uses (a link swapped after
// the check changes nothing).
Result<std::string> check_mcp_seed(const std::string& tool, const std::string& seed, const std::vector<std::string>& allowed);

}  // namespace lazyagent
