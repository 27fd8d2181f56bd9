#include "eval/eval_resume.h"

#include "contract/runner_driver.h"
#include "util/digest.h"
#include "store/provenance.h"
#include "policy/runtime_policy.h"
#include "policy/sandbox_policy.h"

namespace lazyagent {

using nlohmann::json;

json resume_key_to_json(const ResumeKey& k) {
  return json{{"seed", k.seed}, {"patch", k.patch}, {"config", k.config}, {"image", k.image}};
}

std::vector<std::string> changed_parts(const json& stored, const ResumeKey& current) {
  if (!stored.is_object()) return {"key"};
  const json now = resume_key_to_json(current);
  std::vector<std::string> out;
  for (const char* part : kResumeParts) {
    const auto it = stored.find(part);
    if (it == stored.end() || !it->is_string() || *it != now[part]) out.push_back(part);
  }
  return out;
}

json decisive_settings_json(const DecisiveSettings& s) {
  const Config& c = s.config;
  const SandboxPolicy policy = policy_from_config(c, s.timeout_seconds);
  json j = {
      {"version", LAZYAGENT_VERSION},
      {"backend", s.backend},
      {"test_command", c.test_command},
      {"allow", c.allow},
      {"patch_limits", {{"max_files", c.patch.max_files}, {"max_bytes", c.patch.max_bytes}}},
      {"policy", effective_policy_json(policy, c.engine.runtime, c.engine.accept_weaker_policy)},
      {"baseline", s.baseline},
      {"reruns", s.reruns},
  };
  // The evidence mode decides verdicts (runner_driver.h): "auto" by default.
  j["report"] = report_mode(c.report);
  if (s.backend == "k8s") {
    j["k8s"] = {{"namespace", s.k8s_namespace}, {"runtime_class", s.k8s_runtime_class}};
  }
  if (s.instruction) {
    j["planner"] = {{"image", c.images.planner},
                    {"timeout_seconds", c.timeouts.planner_seconds},
                    {"secrets", {c.provider.base_url_secret, c.provider.model_secret, c.provider.api_key_secret}},
                    {"network", c.provider.network},
                    {"connect_timeout_seconds", c.provider.connect_timeout_seconds},
                    {"request_timeout_seconds", c.provider.timeout_seconds},
                    {"max_retries", c.provider.max_retries}};
  }
  return j;
}

std::string decisive_settings_sha256(const DecisiveSettings& s) { return canonical_sha256(decisive_settings_json(s)); }

std::string task_input_sha256(const std::string& patch_json, const std::string& instruction) {
  return instruction.empty() ? sha256_hex(patch_json) : sha256_hex("instruction:" + instruction);
}

}  // namespace lazyagent
