// `configure` on Kubernetes (K8sEngine::store_provider): the provider's
// settings as one Secret (keys base_url, model, api_key) in the engine's
// namespace, named by k8s.secret; the planner Job mounts it (k8s_engine.h).
// Its values are replaced when it exists. Plain http needs the config's
// opt-in k8s.plain_http_provider_ip and the name host.containers.internal.
#include "engine/k8s/k8s_engine.h"

#include "policy/planner_policy.h"
#include "provider/provider_client.h"

namespace lazyagent {

using nlohmann::json;

Result<ProviderStored> K8sEngine::store_provider(const Config& config, const ProviderValues& v) {
  const std::string& url_name = config.provider.base_url_secret;
  if (auto st = validate_base_url(v.base_url); !st) return st.error().context("configure: " + url_name);
  const bool plain_http = v.base_url.rfind("http://", 0) == 0;
  if (plain_http) {
    if (config.k8s.plain_http_provider_ip.empty()) {
      return usage_error("configure: " + url_name + " uses plain http; inside the cluster that needs the "
                         "opt-in k8s.plain_http_provider_ip in the config");
    }
    if (v.base_url.rfind("http://host.containers.internal", 0) != 0) {
      return usage_error("configure: with k8s.plain_http_provider_ip, " + url_name +
                         " must be http://host.containers.internal:PORT/v1 (the name the planner pod "
                         "resolves to that address)");
    }
  }
  const json secret_obj = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"type", "Opaque"},
      {"metadata", {{"name", s_.secret}, {"namespace", s_.ns}, {"labels", {{"io.lazyagent.role", "provider-secret"}}}}},
      {"stringData", {{kSecretBaseUrl, v.base_url}, {kSecretModel, v.model}, {kSecretApiKey, v.api_key}}}};
  auto existing = k8s_->get(kK8sSecrets, s_.ns, s_.secret);
  if (!existing) return existing.error();
  Status st = ok_status();
  if (*existing) {
    json replaced = secret_obj;
    replaced["metadata"]["resourceVersion"] = (**existing)["metadata"].value("resourceVersion", "");
    replaced["data"] = json::object();  // stringData replaces every key
    auto r = k8s_->replace(kK8sSecrets, s_.ns, replaced);
    if (!r) st = r.error();
  } else {
    auto r = k8s_->create(kK8sSecrets, s_.ns, secret_obj);
    if (!r) st = r.error();
  }
  if (!st) {
    std::string msg = st.error().message;
    for (const auto& value : {v.base_url, v.model, v.api_key}) msg = redact(msg, value);
    return Error{st.error().kind, msg};
  }
  const json plain = plain_http ? json("opted in: host.containers.internal -> " + config.k8s.plain_http_provider_ip +
                                       " (k8s.plain_http_provider_ip)")
                                : json(false);
  ProviderStored out;
  out.json = {{"backend", "k8s"},
              {"namespace", s_.ns},
              {"secret", s_.secret},
              {"replaced", static_cast<bool>(*existing)},
              {"keys", {kSecretBaseUrl, kSecretModel, kSecretApiKey}},
              {"plain_http_provider", plain}};
  out.lines.push_back((*existing ? "replaced " : "stored ") + std::string("Kubernetes Secret ") + s_.ns + "/" +
                      s_.secret + " (keys base_url, model, api_key)");
  if (plain_http) out.lines.push_back("plain http provider: " + plain.get<std::string>());
  return out;
}

}  // namespace lazyagent
