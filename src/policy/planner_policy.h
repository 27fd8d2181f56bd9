// The planner container's policy and create request. Pure.
//
// The planner is our own binary (`lazyagent-oci plan`), but it handles the
// provider secrets and untrusted model output, so it gets the least it needs:
// the three provider secrets as files under /run/secrets (never environment
// variables), the network the provider needs (default bridge), a read-only
// root with small tmpfs for /run/secrets (secret mount points) and /tmp, no
// capabilities, no-new-privileges, memory/pids caps, a timeout and labels.
// Its task arrives by upload into /task; its stdout carries only the patch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"

namespace lazyagent {

inline constexpr const char* kTaskDir = "/task";
inline constexpr const char* kTaskFile = "/task/task.json";
inline constexpr const char* kSecretsDir = "/run/secrets";
// In-container names of the secret files, whatever the podman secrets are called.
inline constexpr const char* kSecretBaseUrl = "base_url";
inline constexpr const char* kSecretModel = "model";
inline constexpr const char* kSecretApiKey = "api_key";

struct PlannerRequest {
  std::string image;
  std::string name;
  std::map<std::string, std::string> labels;
  std::string network = "bridge";
  std::string base_url_secret, model_secret, api_key_secret;  // podman secret names
  std::int64_t memory_bytes = 256LL << 20;
  std::int64_t pids = 64;
  std::int64_t nofile = 1024;
  std::int64_t nproc = 64;
  std::int64_t timeout_seconds = 600;
};

PlannerRequest planner_request_from_config(const Config& config);

nlohmann::json build_planner_spec(const PlannerRequest& req);

}  // namespace lazyagent
