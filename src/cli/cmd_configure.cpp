// `lazyagent-oci configure` and `lazyagent-oci secret list|delete`.
//
// The provider's base URL, model and API key live only where the planner
// reads them (podman secrets, a Kubernetes Secret: Engine::store_provider),
// which only the planner container receives (as files). configure reads them
// from the environment variables named like the secrets; the engine
// validates the URL and replaces what is stored. No value is ever printed.
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/podman/podman_client.h"
#include "engine/engine.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::vector<std::string> secret_names(const Config& c) {
  return {c.provider.base_url_secret, c.provider.model_secret, c.provider.api_key_secret};
}

}  // namespace

int cmd_configure(const std::vector<std::string>& args) {
  std::string config_path, secret;
  bool json_out = false;
  BackendOptions backend;
  ArgParser p("configure", "[--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--secret NAME] [--config FILE] [--json]",
              "Stores the provider settings where the planner reads them, read from the environment:\n"
              "  CODING_AGENT_BASE_URL  https://provider.example/v1 (http only for this machine:\n"
              "                         localhost, 127.0.0.0/8, ::1, host.containers.internal, or\n"
              "                         podman's gateway address; the planner runs in a container, so\n"
              "                         all but host.containers.internal are stored as that name)\n"
              "  CODING_AGENT_MODEL     the model name\n"
              "  CODING_AGENT_API_KEY   the key (read it with: read -rsp 'key: ' CODING_AGENT_API_KEY)\n"
              "The names come from the config's provider.secrets. On podman: three podman secrets of those\n"
              "names. On Kubernetes (--backend k8s): one Secret (keys base_url, model, api_key) named by\n"
              "--secret or k8s.secret; plain http there needs the config's opt-in\n"
              "k8s.plain_http_provider_ip (use http://host.containers.internal:PORT/v1); to use an\n"
              "existing Secret instead, set k8s.secret and run nothing here. Existing values are replaced.\n"
              "Values are never printed; unset the variables afterwards.");
  add_backend_options(p, &backend);
  p.option("--secret", &secret, "NAME", "with --backend k8s: the Secret's name (default: the config's k8s.secret)");
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  p.flag("--json", &json_out, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), json_out);
  if (!secret.empty()) config->k8s.secret = secret;
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
  auto factory = engine_factory(backend, *config, default_run_store());
  if (!factory) return report_error(factory.error(), json_out);
  auto stored = (*factory)()->store_provider(*config, ProviderValues{values[0], values[1], values[2]});
  if (!stored) return report_error(stored.error(), json_out);
  if (!stored->note.empty()) std::cerr << "lazyagent-oci: " << escape_for_terminal(stored->note) << "\n";
  if (json_out) {
    std::cout << stored->json.dump(2) << std::endl;
    return 0;
  }
  for (const auto& line : stored->lines) std::cout << escape_for_terminal(line) << "\n";
  std::cout << "done; now unset " << names[0] << " " << names[1] << " " << names[2] << "\n";
  return 0;
}

int cmd_secret(const std::vector<std::string>& args) {
  std::string action, name, config_path;
  bool json_out = false;
  ArgParser p("secret", "list [--config FILE] [--json] | delete NAME",
              "Lists the provider secrets the config names (names and dates only, never values),\n"
              "or deletes one podman secret.");
  p.positional("ACTION", &action, true, "list or delete", {"list", "delete"});
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
