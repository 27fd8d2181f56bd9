// The sandbox's private copy through the registry (k8s.registry): pushed as
// a seed image (k8s_seed_image.h), verified by digest before the Job starts,
// pulled by the pod by digest, deleted with the run's objects and by `reap`.
#include <chrono>
#include <fstream>
#include <sstream>

#include "engine/k8s/k8s_engine.h"
#include "engine/k8s/k8s_environments.h"
#include "engine/k8s/k8s_seed_image.h"
#include "export/export_k8s_configmap.h"
#include "policy/sandbox_policy.h"
#include "util/base64.h"

namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

Result<std::string> read_registry_file(const std::string& path, const char* key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(std::string("k8s.") + key + ": cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string v = s.str();
  if (v.size() > (1 << 20)) return usage_error(std::string("k8s.") + key + ": " + path + " is larger than 1 MiB");
  return v;
}

long seed_ms_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

// The image pull Secret (kubernetes.io/dockerconfigjson) for a registry
// with credentials: the kubelet reads it to pull; no container mounts it.
ordered_json registry_pull_secret(const RegistryConnection& c, const std::string& name, const std::string& ns) {
  json auths;
  auths["auths"][c.address] = {{"username", c.username},
                               {"password", c.password},
                               {"auth", base64_encode(c.username + ":" + c.password)}};
  ordered_json s = {{"apiVersion", "v1"},
                    {"kind", "Secret"},
                    {"metadata", {{"name", name}, {"namespace", ns}}},
                    {"type", "kubernetes.io/dockerconfigjson"},
                    {"data", {{".dockerconfigjson", base64_encode(auths.dump())}}}};
  return s;
}

}  // namespace

Result<RegistryClient*> K8sEngine::registry() {
  if (registry_) return registry_.get();
  RegistryConnection c;
  c.address = s_.registry;
  c.plain_http = s_.registry_plain_http;
  if (!s_.registry_ca_file.empty()) {
    if (c.plain_http) {
      return usage_error("k8s.registry_ca_file is for an https registry, and k8s.registry_plain_http: true says "
                         "plain HTTP: drop one of them");
    }
    auto ca = read_registry_file(s_.registry_ca_file, "registry_ca_file");
    if (!ca) return ca.error();
    if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return usage_error("k8s.registry_ca_file: " + s_.registry_ca_file +
                         " holds no PEM certificate (-----BEGIN CERTIFICATE-----): name the registry's CA in PEM");
    }
    c.ca_pem = *ca;
    c.ca_file = s_.registry_ca_file;
  }
  if (!s_.registry_username.empty()) {
    auto pw = read_registry_file(s_.registry_password_file, "registry_password_file");
    if (!pw) return pw.error();
    while (!pw->empty() && (pw->back() == '\n' || pw->back() == '\r')) pw->pop_back();
    c.username = s_.registry_username;
    c.password = *pw;
    c.password_file = s_.registry_password_file;
  }
  // Asked once, before anything is pushed or any Job made: a registry that
  // is down, asks for credentials or refuses them says so here, by name.
  auto client = std::make_shared<RegistryClient>(std::move(c));
  if (auto st = client->ping(); !st) return st.error().context("k8s.registry");
  registry_ = std::move(client);
  return registry_.get();
}

Result<K8sPushedSeed> K8sEngine::push_seed(std::vector<K8sFile> files, const std::vector<std::string>& empty_dirs,
                                           const char* role, const std::string& run_id, const std::string& tag) {
  auto reg = registry();
  if (!reg) return reg.error();
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, std::string> annotations;
  for (const auto& [k, v] : k8s_owner_labels(role, run_id)) annotations[k] = v;
  annotations[kAnnotationPushed] = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                      std::chrono::system_clock::now().time_since_epoch())
                                                      .count());
  auto blobs = build_seed_image(files, empty_dirs, annotations);
  if (!blobs) return blobs.error();
  files.clear();
  const long build_ms = seed_ms_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  auto img = push_seed_image(**reg, *blobs, tag);
  if (!img) return img.error();
  const long push_ms = seed_ms_since(t1);
  // From here the image exists: every path out deletes it (extras.on_remove).
  std::shared_ptr<RegistryClient> client = registry_;
  K8sPushedSeed out;
  out.image = *img;
  const SeedImage image = *img;
  out.extras.on_remove = [client, image]() { return client->delete_manifest(image.repo, image.digest); };
  out.extras.before_start = [client, image]() { return verify_seed_image(*client, image); };
  out.extras.seed = {{"transport", "registry"},
                     {"image", image.reference()},
                     {"digest", image.digest},
                     {"layer_digest", image.layer_digest},
                     {"bytes", image.seed_bytes},
                     {"layer_bytes", image.layer_bytes},
                     {"files", image.files},
                     {"build_ms", build_ms},
                     {"push_ms", push_ms},
                     {"pull_secret", !client->connection().username.empty()}};
  return out;
}

void K8sEngine::add_pull_secret(K8sObjects& objects, nlohmann::ordered_json& job, const char* role,
                                const std::string& run_id) {
  const RegistryConnection& c = registry_->connection();
  if (c.username.empty()) return;
  const std::string name = run_id + (std::string(role) == "sandbox" ? "" : "-" + std::string(role)) + "-registry";
  ordered_json secret = registry_pull_secret(c, name, s_.ns);
  for (const auto& [k, v] : k8s_owner_labels(role, run_id)) secret["metadata"]["labels"][k] = v;
  objects.emplace_back(&kK8sSecrets, std::move(secret));
  job["spec"]["template"]["spec"]["imagePullSecrets"] = ordered_json::array({{{"name", name}}});
}

Result<std::unique_ptr<Sandbox>> K8sEngine::prepare_sandbox_from_registry(const SandboxSpec& spec,
                                                                           SandboxPolicy policy) {
  std::vector<std::string> empty_dirs;
  auto files = spec.writes ? seed_files(*spec.seed, *spec.writes, &empty_dirs)
                           : seed_files(*spec.seed, std::optional<Patch>(), &empty_dirs);
  if (!files) return files.error().context("the seed image");
  auto pushed = push_seed(std::move(*files), empty_dirs, "sandbox", spec.run_id, spec.run_id);
  if (!pushed) return pushed.error();
  auto d = documents(*spec.config, policy, *spec.seed, spec.writes, nullptr, spec.run_id, &pushed->image);
  if (!d) {
    (void)pushed->extras.on_remove();
    return d.error();
  }
  K8sObjects objects{{&kK8sNetworkPolicies, d->network_policy}};
  add_pull_secret(objects, d->sandbox_job, "sandbox", spec.run_id);
  // The environment image (k8s_environments.h), when the sandbox runs one:
  // still in the registry as checked when it was resolved.
  const auto& env = spec.config->environment.resolved;
  if (!env.registry.digest.empty()) {
    std::shared_ptr<RegistryClient> client = registry_;
    const std::string env_digest = env.registry.digest;
    const std::string env_config = env.id.rfind("sha256:", 0) == 0 ? env.id : "sha256:" + env.id;
    auto seed_check = pushed->extras.before_start;
    pushed->extras.before_start = [client, seed_check, env_digest, env_config]() -> Status {
      if (seed_check) {
        if (auto st = seed_check(); !st) return st;
      }
      return verify_environment_image(*client, env_digest, env_config);
    };
  }
  return make_k8s_job(*k8s_, s_, spec.run_id, "sandbox", std::move(objects), d->sandbox_job, true, policy, *d,
                      std::move(pushed->extras));
}

}  // namespace lazyagent
