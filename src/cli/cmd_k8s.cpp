// `configure --backend k8s`: the provider settings as one Kubernetes Secret
// (the planner Job mounts it, k8s_engine.h). `run`, `test`, `eval` and
// `reap` take --backend as a choice of engine (cli.h, engine_factory).
#include <cstdlib>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/kubeconfig.h"
#include "policy/planner_policy.h"
#include "provider/provider_client.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

std::optional<std::vector<std::string>> k8s_backend_args(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  bool k8s = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--backend=k8s") {
      k8s = true;
    } else if (args[i] == "--backend" && i + 1 < args.size() && args[i + 1] == "k8s") {
      k8s = true;
      ++i;
    } else {
      rest.push_back(args[i]);
    }
  }
  if (!k8s) return std::nullopt;
  return rest;
}

namespace {

const char* kK8sOptionsHelp =
    "Kubernetes connection: --kubeconfig FILE, else $KUBECONFIG, else the pod's service account\n"
    "(in-cluster), else ~/.kube/config. The local cluster: scripts/k8s-cluster.sh start.";

Result<std::unique_ptr<K8sClient>> connect(const std::string& kubeconfig) {
  auto conn = resolve_k8s_connection(kubeconfig);
  if (!conn) return conn.error();
  return std::make_unique<K8sClient>(std::move(*conn));
}

}  // namespace

int cmd_configure_k8s(const std::vector<std::string>& args) {
  std::string config_path, ns, kubeconfig, secret;
  bool json_out = false;
  ArgParser p("configure --backend k8s", "[--namespace NS] [--secret NAME] [--kubeconfig FILE] [--config FILE] [--json]",
              std::string("Stores the provider settings as one Kubernetes Secret (keys base_url, model, api_key),\n"
                          "read from CODING_AGENT_BASE_URL, CODING_AGENT_MODEL, CODING_AGENT_API_KEY (the\n"
                          "config's provider.secrets names). Replaces the Secret's values if it exists. Values are\n"
                          "never printed. A base_url with plain http needs the config's opt-in\n"
                          "k8s.plain_http_provider_ip (use http://host.containers.internal:PORT/v1).\n"
                          "To use an existing Secret instead, set k8s.secret in the config; nothing to run here.\n") +
                  kK8sOptionsHelp);
  p.option("--namespace", &ns, "NS", "namespace (default: the config's k8s.namespace)");
  p.option("--secret", &secret, "NAME", "the Secret's name (default: the config's k8s.secret)");
  p.option("--kubeconfig", &kubeconfig, "FILE", "kubeconfig file");
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  p.flag("--json", &json_out, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), json_out);
  if (ns.empty()) ns = config->k8s.ns;
  if (secret.empty()) secret = config->k8s.secret;
  const std::string env_names[] = {config->provider.base_url_secret, config->provider.model_secret,
                                   config->provider.api_key_secret};
  std::string values[3], missing;
  for (int i = 0; i < 3; ++i) {
    const char* v = std::getenv(env_names[i].c_str());
    if (!v || !*v) missing += (missing.empty() ? "" : ", ") + env_names[i];
    values[i] = v ? v : "";
  }
  if (!missing.empty()) {
    return report_error(usage_error("configure: set " + missing + " in the environment first"), json_out);
  }
  if (auto st = validate_base_url(values[0]); !st) return report_error(st.error().context("configure: " + env_names[0]), json_out);
  const bool plain_http = values[0].rfind("http://", 0) == 0;
  if (plain_http) {
    if (config->k8s.plain_http_provider_ip.empty()) {
      return report_error(usage_error("configure: " + env_names[0] + " uses plain http; inside the cluster that needs the "
                                      "opt-in k8s.plain_http_provider_ip in the config"),
                          json_out);
    }
    if (values[0].rfind("http://host.containers.internal", 0) != 0) {
      return report_error(usage_error("configure: with k8s.plain_http_provider_ip, " + env_names[0] +
                                      " must be http://host.containers.internal:PORT/v1 (the name the planner pod "
                                      "resolves to that address)"),
                          json_out);
    }
  }
  auto k8s = connect(kubeconfig);
  if (!k8s) return report_error(k8s.error(), json_out);
  const json secret_obj = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"type", "Opaque"},
      {"metadata", {{"name", secret}, {"namespace", ns}, {"labels", {{"io.lazyagent.role", "provider-secret"}}}}},
      {"stringData", {{kSecretBaseUrl, values[0]}, {kSecretModel, values[1]}, {kSecretApiKey, values[2]}}}};
  auto existing = (*k8s)->get(kK8sSecrets, ns, secret);
  if (!existing) return report_error(existing.error(), json_out);
  Status st = ok_status();
  if (*existing) {
    json replaced = secret_obj;
    replaced["metadata"]["resourceVersion"] = (**existing)["metadata"].value("resourceVersion", "");
    replaced["data"] = json::object();  // stringData replaces every key
    auto r = (*k8s)->replace(kK8sSecrets, ns, replaced);
    if (!r) st = r.error();
  } else {
    auto r = (*k8s)->create(kK8sSecrets, ns, secret_obj);
    if (!r) st = r.error();
  }
  if (!st) {
    std::string msg = st.error().message;
    for (const auto& v : values) msg = redact(msg, v);
    return report_error(Error{st.error().kind, msg}, json_out);
  }
  json out = {{"backend", "k8s"},
              {"namespace", ns},
              {"secret", secret},
              {"replaced", static_cast<bool>(*existing)},
              {"keys", {kSecretBaseUrl, kSecretModel, kSecretApiKey}},
              {"plain_http_provider", plain_http ? json("opted in: host.containers.internal -> " + config->k8s.plain_http_provider_ip +
                                                        " (k8s.plain_http_provider_ip)")
                                                 : json(false)}};
  if (json_out) {
    std::cout << out.dump(2) << std::endl;
  } else {
    std::cout << (*existing ? "replaced " : "stored ") << "Kubernetes Secret " << ns << "/" << secret
              << " (keys base_url, model, api_key)\n";
    if (plain_http) std::cout << "plain http provider: " << out["plain_http_provider"].get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace lazyagent
