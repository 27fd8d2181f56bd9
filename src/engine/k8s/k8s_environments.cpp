#include "engine/k8s/k8s_environments.h"

#include <chrono>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/k8s/k8s_engine.h"
#include "engine/k8s/podman_registry_trust.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

Status verify_environment_image(RegistryClient& reg, const std::string& digest, const std::string& config_digest) {
  const std::string where = "the environment image " + reg.connection().address + "/" + kEnvironmentRegistryRepo + "@" +
                            digest;
  auto m = reg.get_manifest(kEnvironmentRegistryRepo, digest, kImageManifestTypes);
  if (!m) return m.error().context(where);
  if (!*m) return engine_error(where + " is not in the registry");
  const std::string got = "sha256:" + sha256_hex(**m);
  if (got != digest) return engine_error(where + ": the registry served a manifest whose sha256 is " + got);
  const json j = json::parse(**m, nullptr, false);
  const std::string config = j.is_object() ? j.value("/config/digest"_json_pointer, std::string()) : std::string();
  if (config != config_digest) {
    return engine_error(where + " has the config " + escape_for_terminal(config.substr(0, 80)) +
                        ", not the local image's " + config_digest);
  }
  return ok_status();
}

std::string K8sEnvironments::registry_name() const {
  return reg_->connection().address + "/" + kEnvironmentRegistryRepo;
}

Result<std::optional<std::string>> K8sEnvironments::registry_digest(const std::string& key) {
  return reg_->manifest_digest(kEnvironmentRegistryRepo, key, kImageManifestTypes);
}

Status K8sEnvironments::resolve(Config* config, bool rebuild, const ProgressFn& progress) {
  if (auto st = envs_.resolve(config, rebuild, progress); !st) return st;
  auto& r = config->environment.resolved;
  if (r.key.empty()) return ok_status();  // no environment section
  const std::string config_digest = r.id.rfind("sha256:", 0) == 0 ? r.id : "sha256:" + r.id;
  const std::string tag = registry_name() + ":" + r.key;
  auto have = registry_digest(r.key);
  if (!have) return have.error().context("environment on k8s");
  r.registry = {};
  r.registry.tag = tag;
  if (*have && verify_environment_image(*reg_, **have, config_digest).ok()) {
    r.registry.digest = **have;
    if (progress) progress("environment: " + tag + " is in the registry (" + r.registry.digest + "): not pushed");
  } else {
    // podman takes no CA: it must already trust a private one (podman_registry_trust.h).
    if (auto st = check_podman_trusts_ca(reg_->connection(), podman_certs_dirs()); !st) return st;
    if (progress) progress("environment: pushing " + r.image + " to " + tag);
    const auto t0 = std::chrono::steady_clock::now();
    ImagePushTarget target;
    target.destination = tag;
    target.tls_verify = !reg_->connection().plain_http;
    target.username = reg_->connection().username;
    target.password = reg_->connection().password;
    if (auto st = envs_.push(r.image, target); !st) {
      Error e = st.error().context("environment on k8s");
      if (target.tls_verify && e.message.find("x509") != std::string::npos) {
        e.message += " (podman verifies the registry against the system's CAs and certs.d/" +
                     reg_->connection().address + "/*.crt (containers-certs.d(5)): install the registry's CA there)";
      }
      return e;
    }
    r.registry.push_ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    r.registry.pushed = true;
    auto pushed = registry_digest(r.key);
    if (!pushed) return pushed.error().context("environment on k8s");
    if (!*pushed) return engine_error("environment on k8s: the registry has no " + tag + " after podman pushed it");
    if (auto st = verify_environment_image(*reg_, **pushed, config_digest); !st) {
      return st.error().context("environment on k8s, after the push");
    }
    r.registry.digest = **pushed;
    if (progress) {
      progress("environment: pushed " + tag + " (" + r.registry.digest + ") in " +
               std::to_string(r.registry.push_ms) + " ms");
    }
  }
  r.registry.image = registry_name() + "@" + r.registry.digest;
  config->images.sandbox = r.registry.image;
  return ok_status();
}

Result<json> K8sEnvironments::list() {
  auto rows = envs_.list();
  if (!rows) return rows.error();
  std::set<std::string> keys;
  for (auto& row : *rows) {
    const std::string key = row.value("key", "");
    keys.insert(key);
    row["registry"] = nullptr;
    if (key.empty()) continue;
    auto d = registry_digest(key);
    if (!d) return d.error();
    if (*d) row["registry"] = registry_name() + ":" + key + "@" + **d;
  }
  auto tags = reg_->tags(kEnvironmentRegistryRepo);
  if (!tags) return tags.error();
  for (const auto& t : *tags) {
    if (keys.count(t)) continue;
    auto d = registry_digest(t);
    if (!d) return d.error();
    if (!*d) continue;
    rows->push_back({{"image", registry_name() + ":" + t},
                     {"key", t},
                     {"id", registry_name() + "@" + **d},
                     {"base", ""},
                     {"size", 0},
                     {"created", 0},
                     {"registry", registry_name() + ":" + t + "@" + **d}});
  }
  return rows;
}

Status K8sEnvironments::remove(const std::string& id) {
  const std::string in_registry = registry_name() + "@";
  if (id.rfind(in_registry, 0) == 0) return reg_->delete_manifest(kEnvironmentRegistryRepo, id.substr(in_registry.size()));
  auto rows = envs_.list();
  if (!rows) return rows.error();
  for (const auto& row : *rows) {
    if (row.value("id", "") != id || row.value("key", "").empty()) continue;
    auto d = registry_digest(row.value("key", ""));
    if (!d) return d.error();
    if (*d) {
      if (auto st = reg_->delete_manifest(kEnvironmentRegistryRepo, **d); !st) return st;
    }
  }
  return envs_.remove(id);
}

Result<Environments*> K8sEngine::environments() {
  if (environments_) return environments_.get();
  if (s_.registry.empty()) {
    return usage_error("environment: --backend k8s needs k8s.registry: the environment image is built by the local "
                       "podman and reaches the cluster through that registry (README \"On Kubernetes\"; for the "
                       "local cluster: scripts/k8s-registry.sh start, then k8s.registry: 127.0.0.1:25500 and "
                       "k8s.registry_plain_http: true)");
  }
  if (!environment_builder_) return usage_error("environment: --backend k8s has no local podman to build it with");
  auto reg = registry();
  if (!reg) return reg.error();
  std::unique_ptr<Engine> local = environment_builder_();
  auto envs = local->environments();
  if (!envs) return envs.error();
  Environments& local_envs = **envs;
  environments_ = std::make_unique<K8sEnvironments>(std::move(local), local_envs, registry_);
  return environments_.get();
}

}  // namespace lazyagent
