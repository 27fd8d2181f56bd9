// `configure` on podman (PodmanEngine::store_provider): the provider's base
// URL, model and API key as the three podman secrets the config names,
// which only the planner container receives (as files). podman 4.3 has no
// --replace: delete, then create. A base URL naming this machine is stored
// as the planner container must name it (planner_base_url.h); podman's
// gateway address counts as this machine, which needs podman to tell.
#include <map>

#include "engine/podman/podman_engine.h"
#include "provider/planner_base_url.h"
#include "provider/provider_client.h"

namespace lazyagent {

namespace {

using nlohmann::json;

// The addresses of podman's default network's gateways: this machine, as
// containers on the bridge reach it. None when podman cannot say.
std::vector<std::string> podman_gateways(PodmanClient& podman) {
  std::vector<std::string> out;
  auto r = podman.call("GET", "/networks/podman/json");
  if (!r || r->status != 200) return out;
  const json net = json::parse(r->body, nullptr, false);
  if (!net.is_object() || !net.contains("subnets") || !net["subnets"].is_array()) return out;
  for (const auto& s : net["subnets"]) {
    if (s.is_object() && s.contains("gateway") && s["gateway"].is_string()) out.push_back(s["gateway"]);
  }
  return out;
}

// The host of an http(s) URL ("" when there is none): what the gateway check
// compares.
std::string host_of_url(const std::string& url) {
  const std::size_t from = url.find("://");
  if (from == std::string::npos) return "";
  const std::string authority = url.substr(from + 3, url.find('/', from + 3) - (from + 3));
  if (!authority.empty() && authority[0] == '[') return authority.substr(0, authority.find(']') + 1);
  return authority.substr(0, authority.find(':'));
}

}  // namespace

Result<ProviderStored> PodmanEngine::store_provider(const Config& config, const ProviderValues& given) {
  const std::vector<std::string> names = {config.provider.base_url_secret, config.provider.model_secret,
                                          config.provider.api_key_secret};
  std::vector<std::string> values = {given.base_url, given.model, given.api_key};
  const Status given_ok = validate_base_url(values[0]);
  // A gateway address is "not local" to the URL check: refused below unless
  // it is podman's gateway.
  if (!given_ok && planner_base_url(values[0], {host_of_url(values[0])}).url == values[0]) {
    return given_ok.error().context("configure: " + names[0]);
  }
  PodmanClient& podman = planner_client();
  if (auto v = podman.ping(); !v) return v.error();
  // The URL as the planner container must name this machine (planner_base_url.h).
  const PlannerBaseUrl planner_url = planner_base_url(values[0], podman_gateways(podman));
  if (auto st = validate_base_url(planner_url.url); !st) {
    return (given_ok ? st : given_ok).error().context("configure: " + names[0]);
  }
  ProviderStored out;
  if (!planner_url.note.empty()) {
    out.note = "configure: " + names[0] + ": " + planner_url.note;
    values[0] = planner_url.url;
  }
  json stored = json::array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto exists = podman.secret_exists(names[i]);
    if (!exists) return exists.error();
    if (*exists) {
      if (auto st = podman.secret_delete(names[i]); !st) return st.error();
    }
    // The base URL's HOST:PORT as a label: what provider.network: allowlist
    // lets the planner reach (planner_allowlist.h).
    std::map<std::string, std::string> labels;
    if (i == 0 && !provider_origin(values[0]).empty()) labels[kProviderOriginLabel] = provider_origin(values[0]);
    if (auto st = podman.secret_create(names[i], values[i], labels); !st) {
      return Error{st.error().kind, redact(st.error().message, values[i])};
    }
    stored.push_back({{"name", names[i]}, {"replaced", *exists}});
    out.lines.push_back((*exists ? "replaced " : "stored ") + std::string("podman secret ") + names[i]);
  }
  out.json = {{"secrets", stored}};
  if (!planner_url.note.empty()) out.json["base_url_note"] = planner_url.note;
  return out;
}

}  // namespace lazyagent
