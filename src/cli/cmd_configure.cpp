// `lazyagent-oci configure` and `lazyagent-oci secret list|delete`.
//
// The provider's base URL, model and API key live only in podman secrets,
// which only the planner container receives (as files). configure reads them
// from the environment variables named like the secrets, validates the URL,
// and replaces each secret (podman 4.3 has no --replace: delete, then
// create). No value is ever printed.
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/podman/podman_client.h"
#include "provider/planner_base_url.h"
#include "provider/provider_client.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::vector<std::string> secret_names(const Config& c) {
  return {c.provider.base_url_secret, c.provider.model_secret, c.provider.api_key_secret};
}

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

int cmd_configure(const std::vector<std::string>& args) {
  if (auto k8s = k8s_backend_args(args)) return cmd_configure_k8s(*k8s);  // --backend k8s
  std::string config_path;
  bool json_out = false;
  ArgParser p("configure", "[--config FILE] [--json]",
              "Stores the provider settings as podman secrets, read from the environment:\n"
              "  CODING_AGENT_BASE_URL  https://provider.example/v1 (http only for this machine:\n"
              "                         localhost, 127.0.0.0/8, ::1, host.containers.internal, or\n"
              "                         podman's gateway address; the planner runs in a container, so\n"
              "                         all but host.containers.internal are stored as that name)\n"
              "  CODING_AGENT_MODEL     the model name\n"
              "  CODING_AGENT_API_KEY   the key (read it with: read -rsp 'key: ' CODING_AGENT_API_KEY)\n"
              "The names come from the config's provider.secrets. Existing secrets are replaced.\n"
              "Values are never printed; unset the variables afterwards.\n"
              "For Kubernetes (one Secret): `lazyagent-oci configure --backend k8s --help`.");
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  p.flag("--json", &json_out, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), json_out);
  const auto names = secret_names(*config);
  std::vector<std::string> values;
  std::string missing;
  for (const auto& n : names) {
    const char* v = std::getenv(n.c_str());
    if (!v || !*v) missing += (missing.empty() ? "" : ", ") + n;
    values.push_back(v ? v : "");
  }
  if (!missing.empty()) {
    return report_error(usage_error("configure: set " + missing + " in the environment first (see `lazyagent-oci configure --help`)"), json_out);
  }
  const Status given_ok = validate_base_url(values[0]);
  // A gateway address is "not local" to the URL check: refused below unless
  // it is podman's gateway, which needs podman to tell.
  if (!given_ok && planner_base_url(values[0], {host_of_url(values[0])}).url == values[0]) {
    return report_error(given_ok.error().context("configure: " + names[0]), json_out);
  }
  auto socket = podman_socket_from_env();
  if (!socket) return report_error(socket.error(), json_out);
  PodmanClient podman(*socket);
  if (auto v = podman.ping(); !v) return report_error(v.error(), json_out);
  // The URL as the planner container must name this machine (planner_base_url.h).
  const PlannerBaseUrl planner_url = planner_base_url(values[0], podman_gateways(podman));
  if (auto st = validate_base_url(planner_url.url); !st) {
    return report_error((given_ok ? st : given_ok).error().context("configure: " + names[0]), json_out);
  }
  if (!planner_url.note.empty()) {
    std::cerr << "lazyagent-oci: configure: " << names[0] << ": " << escape_for_terminal(planner_url.note) << "\n";
    values[0] = planner_url.url;
  }
  json stored = json::array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto exists = podman.secret_exists(names[i]);
    if (!exists) return report_error(exists.error(), json_out);
    if (*exists) {
      if (auto st = podman.secret_delete(names[i]); !st) return report_error(st.error(), json_out);
    }
    // The base URL's HOST:PORT as a label: what provider.network: allowlist lets the planner reach.
    std::map<std::string, std::string> labels;
    if (i == 0 && !provider_origin(values[0]).empty()) labels[kProviderOriginLabel] = provider_origin(values[0]);
    if (auto st = podman.secret_create(names[i], values[i], labels); !st) {
      return report_error(Error{st.error().kind, redact(st.error().message, values[i])}, json_out);
    }
    stored.push_back({{"name", names[i]}, {"replaced", *exists}});
    if (!json_out) std::cout << (*exists ? "replaced " : "stored ") << "podman secret " << names[i] << "\n";
  }
  if (json_out) {
    json out = {{"secrets", stored}};
    if (!planner_url.note.empty()) out["base_url_note"] = planner_url.note;
    std::cout << out.dump(2) << std::endl;
  }
  else std::cout << "done; now unset " << names[0] << " " << names[1] << " " << names[2] << "\n";
  return 0;
}

int cmd_secret(const std::vector<std::string>& args) {
  std::string action, name, config_path;
  bool json_out = false;
  ArgParser p("secret", "list [--config FILE] [--json] | delete NAME",
              "Lists the provider secrets the config names (names and dates only, never values),\n"
              "or deletes one podman secret.");
  p.positional("ACTION", &action, true, "list or delete");
  p.positional("NAME", &name, false, "the secret to delete");
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  p.flag("--json", &json_out, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (action != "list" && action != "delete") {
    return report_error(usage_error("secret: unknown action '" + action + "' (list or delete)"), json_out);
  }
  if (action == "delete" && name.empty()) return report_error(usage_error("secret delete: NAME is required"), json_out);
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), json_out);
  auto socket = podman_socket_from_env();
  if (!socket) return report_error(socket.error(), json_out);
  PodmanClient podman(*socket);
  if (action == "delete") {
    if (auto st = podman.secret_delete(name); !st) return report_error(st.error(), json_out);
    if (json_out) std::cout << json{{"deleted", name}}.dump() << std::endl;
    else std::cout << "deleted podman secret " << escape_for_terminal(name) << "\n";
    return 0;
  }
  auto list = podman.secret_list();
  if (!list) return report_error(list.error(), json_out);
  json rows = json::array();
  for (const auto& wanted : secret_names(*config)) {
    json row = {{"name", wanted}, {"configured", false}, {"created_at", ""}};
    for (const auto& s : *list) {
      if (s.value("/Spec/Name"_json_pointer, std::string()) == wanted) {
        row["configured"] = true;
        row["created_at"] = s.value("CreatedAt", "");
      }
    }
    rows.push_back(row);
  }
  if (json_out) {
    std::cout << json{{"secrets", rows}}.dump(2) << std::endl;
  } else {
    for (const auto& r : rows) {
      std::cout << std::left << std::setw(28) << r["name"].get<std::string>()
                << (r["configured"].get<bool>() ? r["created_at"].get<std::string>() : std::string("(not configured)")) << "\n";
    }
  }
  return 0;
}

}  // namespace lazyagent
