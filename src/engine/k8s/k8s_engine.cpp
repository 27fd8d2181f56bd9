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
#include "util/package_mirrors.h"
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

bool dns_label(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, re);
}

}  // namespace

K8sRunSettings k8s_settings_from_config(const Config& config) {
  K8sRunSettings s;
  s.ns = config.k8s.ns;
  s.secret = config.k8s.secret;
  s.runtime_class = config.k8s.runtime_class == "none" ? "" : config.k8s.runtime_class;
  s.plain_http_provider_ip = config.k8s.plain_http_provider_ip;
  s.ttl_seconds_after_finished = config.k8s.ttl_seconds_after_finished;
  s.isolation = config.k8s.isolation;
  if (s.isolation == "networkpolicy") s.runtime_class.clear();  // the CNI isolates, no RuntimeClass
  s.egress_probe_targets = config.k8s.egress_probe_targets;
  s.planner_egress = config.k8s.planner_egress;
  s.planner_egress_required = config.k8s.planner_egress_required;
  s.registry = config.k8s.registry;
  s.registry_plain_http = config.k8s.registry_plain_http;
  s.registry_ca_file = config.k8s.registry_ca_file;
  s.registry_username = config.k8s.registry_username;
  s.registry_password_file = config.k8s.registry_password_file;
  s.registry_ttl_seconds = config.k8s.registry_ttl_hours * 3600;
  return s;
}

K8sEngine::K8sEngine(std::unique_ptr<K8sClient> client, K8sRunSettings settings, std::optional<RunStore> store)
    : k8s_(std::move(client)), s_(std::move(settings)), store_(std::move(store)) {}

void K8sEngine::adapt_policy(SandboxPolicy* policy) const {
  // The pod runs as a non-root uid (export_k8s.h), not in podman's id mapping.
  policy->userns.enabled = false;
}

json K8sEngine::policy_json(const SandboxPolicy& policy, const Config&) const {
  json p = policy_to_json(policy);
  // Who runs the tests: the pod's fixed non-root uid (export_k8s.h), no id map.
  p["user"] = {{"mode", "non_root_uid"}, {"uid", kK8sSandboxUid}, {"uid_map", nullptr}, {"gid_map", nullptr}};
  // The runtime provenance names: the pod's RuntimeClass on Kubernetes.
  p["runtime"] = "k8s:" + (s_.runtime_class.empty() ? std::string("default") : s_.runtime_class);
  static const std::map<std::string, std::string> kProof = {
      {"runtime-nonet", "the RuntimeClass gives the pod no network: the isolation probe demands only lo (as on "
                        "podman), and the egress probe must reach nothing"},
      {"runtimeclass", "the RuntimeClass plus the deny-all NetworkPolicy: the pod has an interface; the egress "
                       "probe must have run and reached nothing (API server, node/gateway, cluster DNS, external "
                       "53/80/443, DNS lookup, UDP, IPv6)"},
      {"networkpolicy", "the CNI enforcing the deny-all NetworkPolicy: the pod has an interface; the egress probe "
                        "must have run and reached nothing (API server, node/gateway, cluster DNS, external "
                        "53/80/443, DNS lookup, UDP, IPv6)"}};
  json k = {{"backend", "k8s"},
            {"server", k8s_->connection().server},
            {"server_version", server_version_},
            {"namespace", s_.ns},
            {"objects", json::object()},
            {"provider_secret", s_.secret},
            {"isolation", s_.isolation},
            {"isolation_proof", kProof.count(s_.isolation) ? kProof.at(s_.isolation) : std::string()}};
  if (s_.isolation == "networkpolicy") {
    k["network"] = "the deny-all NetworkPolicy <run>-sandbox-deny-all, enforced by the cluster's CNI (no "
                   "RuntimeClass); checked by the egress probe in the pod";
  } else if (s_.isolation == "runtimeclass") {
    k["network"] = "RuntimeClass " + s_.runtime_class + " under the deny-all NetworkPolicy <run>-sandbox-deny-all; "
                   "checked by the egress probe in the pod";
  } else if (!s_.runtime_class.empty()) {
    k["network"] = "RuntimeClass " + s_.runtime_class +
                   " (on the local cluster: gVisor runsc --network=none under the runc shim: the pod's only "
                   "interface is its own loopback), kept under the deny-all NetworkPolicy <run>-sandbox-deny-all"
                   "; checked by the isolation probe in the pod";
  } else {
    k["network"] = "only the deny-all NetworkPolicy (no RuntimeClass): the probe refuses any pod with an interface "
                   "but lo, so on a CNI without NetworkPolicy no run can pass";
  }
  k["provider_transport"] = plain_http_ ? "plain http, opted in by k8s.plain_http_provider_ip=" +
                                              s_.plain_http_provider_ip +
                                              " (host.containers.internal in the planner pod)"
                                        : "https";
  // The planner pod's egress (k8s.planner_egress); whether the cluster
  // enforced it is the planner's probe's, in the task record.
  k["planner_egress"] = s_.planner_egress.empty()
                            ? json("none: the planner pod has no egress policy (k8s.planner_egress unset)")
                            : json{{"allowed", s_.planner_egress},
                                   {"policy", "NetworkPolicy <run>-planner-egress"},
                                   {"required", s_.planner_egress_required}};
  p["k8s"] = k;
  return p;
}

Status K8sEngine::check(const ProgressFn& progress) {
  if (!dns_label(s_.ns)) return usage_error("namespace '" + s_.ns + "': needs 1-63 characters of a-z, 0-9 and '-'");
  if (!s_.runtime_class.empty() && !dns_label(s_.runtime_class)) {
    return usage_error("k8s.runtime_class '" + s_.runtime_class + "' is not a valid name");
  }
  auto v = k8s_->version();
  if (!v) return v.error();
  server_version_ = v->value("gitVersion", "");
  auto ns = k8s_->namespace_exists(s_.ns);
  if (!ns) return ns.error();
  if (!*ns) return usage_error("namespace '" + s_.ns + "' does not exist (kubectl create namespace " + s_.ns + ")");
  if (!s_.registry.empty()) {
    if (auto reg = registry(); !reg) return reg.error();  // answers, and takes the credentials
  }
  auto reaped = reap(false);
  if (!reaped) return reaped.error();
  if (!reaped->removed.empty() && progress) {
    progress("reaped " + std::to_string(reaped->removed.size()) + " object(s) left by crashed runs");
  }
  return ok_status();
}

Status K8sEngine::after_outage() {
  auto v = k8s_->version();
  if (!v) return v.error();
  return ok_status();
}

Result<K8sDocuments> K8sEngine::documents(const Config& config, const SandboxPolicy& policy, const SeedSnapshot& seed,
                                          const std::vector<FileWrite>* writes, const PlannerTask* task,
                                          const std::string& run_id, const SeedImage* seed_image,
                                          const SeedImage* planner_snapshot) const {
  ExportInput in;
  in.config = config;
  in.policy = policy;
  in.planner = planner_request_from_config(config);
  in.seed = seed;
  if (writes) in.writes = *writes;
  if (task) in.task = *task;
  in.name = run_id;
  in.k8s_namespace = s_.ns;
  if (seed_image) {
    in.k8s_seed_image = seed_image->reference();
    in.k8s_seed_image_bytes = static_cast<std::int64_t>(seed_image->disk_bytes);
  }
  if (planner_snapshot) {
    in.k8s_planner_snapshot_image = planner_snapshot->reference();
    in.k8s_planner_snapshot_bytes = static_cast<std::int64_t>(planner_snapshot->disk_bytes);
  }
  auto docs = k8s_documents(in);
  if (!docs) return docs.error();
  adapt_documents(*docs, s_, run_id);
  return docs;
}

Result<std::unique_ptr<Sandbox>> K8sEngine::prepare_sandbox(const SandboxSpec& spec) {
  if (server_version_.empty()) {  // an eval worker whose engine was not the one checked
    if (auto v = k8s_->version(); v) server_version_ = v->value("gitVersion", "");
  }
  SandboxPolicy policy = spec.policy;
  policy.egress_probe_targets = egress_targets();
  if (!s_.registry.empty()) return prepare_sandbox_from_registry(spec, std::move(policy));
  auto d = documents(*spec.config, policy, *spec.seed, spec.writes, nullptr, spec.run_id);
  if (!d) return d.error();
  return make_k8s_job(*k8s_, s_, spec.run_id, "sandbox",
                      K8sObjects{{&kK8sConfigMaps, d->seed_configmap}, {&kK8sNetworkPolicies, d->network_policy}},
                      d->sandbox_job, true, policy, *d);
}

// The API server as the kubeconfig names it, the `kubernetes` Service in
// `default` when this account may read it (the namespaced Role of
// docs/k8s-rbac.yaml may not: then the probe still tries kubernetes.default
// by name), the config's, and the package mirror's; once per engine.
const std::vector<std::string>& K8sEngine::egress_targets() {
  if (egress_targets_) return *egress_targets_;
  std::string service;
  static constexpr K8sKind kServices{"/api/v1", "services", "Service"};
  if (auto svc = k8s_->get(kServices, "default", "kubernetes"); svc && *svc) {
    const std::string ip = (**svc).value("/spec/clusterIP"_json_pointer, std::string());
    const int port = (**svc).value("/spec/ports/0/port"_json_pointer, 443);
    if (!ip.empty() && ip != "None") {
      service = (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
    }
  }
  egress_targets_ = k8s_egress_targets(k8s_->connection().server, service, s_.egress_probe_targets);
  // The outside, as the package mirror this machine's apt uses (the only host
  // outside it a probe may aim at: egress_probe.h).
  for (auto& t : package_mirror_probe_targets()) egress_targets_->push_back(std::move(t));
  return *egress_targets_;
}

// The provider Secret exists with its three keys; only base_url's scheme
// is looked at (plain http needs the opt-in).
Status K8sEngine::check_planner(const Config&) {
  auto secret = k8s_->get(kK8sSecrets, s_.ns, s_.secret);
  if (!secret) return secret.error();
  if (!*secret) {
    return usage_error("the provider Secret " + s_.ns + "/" + s_.secret +
                       " does not exist: run `lazyagent-oci configure --backend k8s` (or name yours with k8s.secret)");
  }
  const json data = (**secret).value("data", json::object());
  for (const char* key : {kSecretBaseUrl, kSecretModel, kSecretApiKey}) {
    if (!data.contains(key)) {
      return usage_error("the provider Secret " + s_.ns + "/" + s_.secret + " has no key '" + key +
                         "' (it needs base_url, model, api_key)");
    }
  }
  // A Secret's data is base64; only the URL's scheme is looked at.
  const auto url = base64_decode(data.value(kSecretBaseUrl, ""));
  if (!url) return usage_error("the provider Secret " + s_.ns + "/" + s_.secret + ": base_url is not valid base64");
  plain_http_ = url->rfind("http://", 0) == 0;
  if (plain_http_ && s_.plain_http_provider_ip.empty()) {
    return usage_error("the provider Secret's base_url uses plain http; from inside the cluster that needs the "
                       "opt-in k8s.plain_http_provider_ip in the config (the address host.containers.internal "
                       "resolves to in the planner pod)");
  }
  return ok_status();
}

Result<std::unique_ptr<Container>> K8sEngine::prepare_planner(const PlannerSpec& spec) {
  SandboxPolicy policy = policy_from_config(*spec.config, spec.config->timeouts.test_seconds);
  adapt_policy(&policy);
  json why_none;
  auto snapshot = planner_snapshot_image(spec, &why_none);
  if (!snapshot) return snapshot.error();
  auto d = documents(*spec.config, policy, *spec.seed, nullptr, spec.task, spec.run_id, nullptr,
                     *snapshot ? &(*snapshot)->image : nullptr);
  if (!d) {
    if (*snapshot) (void)(*snapshot)->extras.on_remove();
    return d.error();
  }
  K8sObjects objects{{&kK8sConfigMaps, d->task_configmap}};
  K8sJobExtras extras;
  if (*snapshot) {
    add_pull_secret(objects, d->planner_job, "planner", spec.run_id);
    extras = std::move((*snapshot)->extras);
  } else {
    extras.seed = why_none;
  }
  if (!s_.planner_egress.empty()) {
    std::string targets;
    for (const auto& t : egress_targets()) targets += (targets.empty() ? "" : " ") + t;
    objects.emplace_back(&kK8sNetworkPolicies, add_planner_egress(*d, s_, spec.run_id, targets));
  }
  return std::unique_ptr<Container>(
      make_k8s_job(*k8s_, s_, spec.run_id, "planner", std::move(objects), d->planner_job, false, policy, *d,
                   std::move(extras)));
}

EnginePlacement K8sEngine::placement() const {
  EnginePlacement p;
  p.settings = {{"namespace", s_.ns}, {"runtime_class", s_.runtime_class}};
  p.where = "Kubernetes namespace " + s_.ns;
  p.prepare_ahead = false;  // the cluster schedules the pods
  return p;
}

}  // namespace lazyagent
