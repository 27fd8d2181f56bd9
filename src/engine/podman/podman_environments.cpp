// The podman engine's environments (environment.h): `env build|list|prune`
// and the environment test, run and eval use, through Engine::environments.
#include "engine/podman/environment.h"

#include "engine/podman/podman_client.h"
#include "util/base64.h"

namespace lazyagent {

namespace {

using nlohmann::json;

std::string env_label_value(const json& image, const std::string& key) {
  if (image.contains("Labels") && image["Labels"].is_object()) return image["Labels"].value(key, "");
  return "";
}

std::string env_tag(const json& image) {
  if (image.contains("Names") && image["Names"].is_array()) {
    for (const auto& n : image["Names"]) {
      if (n.is_string() && n.get<std::string>().rfind(kEnvironmentRepo, 0) == 0) return n.get<std::string>();
    }
  }
  return "";
}

}  // namespace

Status PodmanEnvironments::resolve(Config* config, bool rebuild, const ProgressFn& progress) {
  return resolve_environment(podman_, config, rebuild, progress);
}

Result<json> PodmanEnvironments::list() {
  auto images = podman_.images_by_label(kEnvironmentRoleLabel);
  if (!images) return images.error();
  json rows = json::array();
  for (const auto& img : *images) {
    rows.push_back({{"image", env_tag(img)},
                    {"key", env_label_value(img, kEnvironmentKeyLabel)},
                    {"id", img.value("Id", "")},
                    {"base", env_label_value(img, "io.lazyagent.env.base")},
                    {"size", img.value("Size", 0L)},
                    {"created", img.value("Created", 0L)}});
  }
  return rows;
}

std::string PodmanEnvironments::current_key(const Config& config) {
  if (!config.environment.present || config.seed.empty()) return "";
  auto inputs = read_environment_inputs(config.environment, config.seed);
  const std::string base = config.environment.base.empty() ? config.images.sandbox : config.environment.base;
  auto base_img = podman_.image_inspect(base, "environment.base");
  if (!inputs || !base_img) return "";
  return environment_key(config.environment, base, base_img->value("Id", ""), *inputs);
}

Status PodmanEnvironments::remove(const std::string& id) { return podman_.image_remove(id); }

Status PodmanEnvironments::push(const std::string& image, const ImagePushTarget& target) {
  std::string auth;
  if (!target.username.empty()) {
    // Podman decodes X-Registry-Auth as URL-safe base64.
    auth = base64_encode(json{{"username", target.username}, {"password", target.password}}.dump());
    for (char& c : auth) c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  return podman_.image_push(image, target.destination, target.tls_verify, auth, target.timeout_ms);
}

}  // namespace lazyagent
