// What the API server stored against what was sent: any difference, or a
// field an admission webhook added that would weaken the sandbox, refuses
// the run.
#include "engine/k8s/k8s_engine.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "util/base64.h"
#include "policy/isolation_probe.h"
#include "store/ownership.h"
#include "policy/planner_egress.h"
#include "policy/planner_policy.h"
#include "store/store_sweep.h"
#include "policy/sandbox_policy.h"


namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// Collects the differences between `sent` and `stored` under `path`.
void stored_diff(const json& sent, const json& stored, const std::string& path, std::vector<std::string>* out) {
  if (sent.is_object()) {
    if (!stored.is_object()) {
      out->push_back(path + " is not an object any more");
      return;
    }
    for (const auto& [k, v] : sent.items()) {
      if (!stored.contains(k)) {
        out->push_back(path + "." + k + " was dropped");
        continue;
      }
      stored_diff(v, stored[k], path + "." + k, out);
    }
    return;
  }
  if (sent.is_array()) {
    if (!stored.is_array() || stored.size() != sent.size()) {
      out->push_back(path + " has " + std::to_string(stored.is_array() ? stored.size() : 0) + " entries, not " +
                     std::to_string(sent.size()));
      return;
    }
    for (std::size_t i = 0; i < sent.size(); ++i) stored_diff(sent[i], stored[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (sent != stored) out->push_back(path + " is " + stored.dump() + ", " + sent.dump() + " was sent");
}

// Fields an admission webhook could add that would weaken the sandbox.
void added_fields(const json& stored, const std::string& path, std::vector<std::string>* out) {
  if (stored.is_array()) {
    for (std::size_t i = 0; i < stored.size(); ++i) added_fields(stored[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (!stored.is_object()) return;
  static const char* kDenied[] = {"hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace",
                                  "initContainers", "ephemeralContainers", "envFrom"};
  for (const auto& [k, v] : stored.items()) {
    for (const char* d : kDenied) {
      if (k == d && !(v.is_boolean() && !v.get<bool>()) && !(v.is_array() && v.empty())) {
        out->push_back(path + "." + k + " was added");
      }
    }
    added_fields(v, path + "." + k, out);
  }
}

}  // namespace

std::vector<std::string> k8s_stored_violations(const json& sent, const json& stored) {
  std::vector<std::string> out;
  stored_diff(sent, stored, "", &out);
  added_fields(stored, "", &out);
  return out;
}

}  // namespace lazyagent
