// `lazyagent-oci env build|list|prune`: the project's test image
// (environment.h), and use_environment for test, run and eval.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/podman/environment.h"
#include "engine/podman/podman_client.h"
#include "pipeline/run_result.h"
#include "contract/seed_snapshot.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

using nlohmann::json;

struct EnvOptions {
  std::string action;
  ProjectOptions project;
  bool rebuild = false;
  bool all = false;
  bool json = false;
};

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

Status use_environment(Config* config, const BackendOptions& backend, bool rebuild) {
  if (!config->environment.present) return ok_status();
  if (backend.backend != "podman") {
    return usage_error("environment: --backend " + backend.backend +
                       " cannot use a built environment yet (the image exists only in the local podman); "
                       "use --backend podman, or push the image and name it in images.sandbox");
  }
  auto socket = podman_socket_from_env();
  if (!socket) return socket.error();
  PodmanClient podman(*socket);
  return resolve_environment(podman, config, rebuild, [](const std::string& line) { progress_line(line); });
}

int cmd_env(const std::vector<std::string>& args) {
  EnvOptions opt;
  ArgParser p("env", "build [--seed DIR] [--config FILE] [--rebuild] [--json] | list [--json] | prune [--all] [--config FILE] [--json]",
              "The project's test image, from the config's `environment:` (base + setup + inputs): built\n"
              "with network in a set-up container (no secrets, the inputs copied in, the seed never\n"
              "mounted), committed as localhost/lazyagent-env:<key>, where the key hashes the base image,\n"
              "the set-up and the inputs' contents. test, run and eval build it on first use and reuse it.\n"
              "list: the environment images; prune: remove them, except the config's own (unless --all).");
  p.positional("ACTION", &opt.action, true, "build, list or prune");
  p.option("--seed", &opt.project.seed, "DIR", "build: the project (default: the config's seed)");
  p.option("--config", &opt.project.config, "FILE", kConfigOptionHelp);
  p.flag("--rebuild", &opt.rebuild, "build: build even when the image exists");
  p.flag("--all", &opt.all, "prune: remove the config's own environment too");
  p.flag("--json", &opt.json, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (opt.action != "build" && opt.action != "list" && opt.action != "prune") {
    return report_error(usage_error("env: unknown action '" + opt.action + "' (build, list or prune)"), opt.json);
  }
  auto socket = podman_socket_from_env();
  if (!socket) return report_error(socket.error(), opt.json);
  PodmanClient podman(*socket);

  if (opt.action == "build") {
    auto config = project_config(opt.project, "env build");
    if (!config) return report_error(config.error(), opt.json);
    if (!config->environment.present) {
      return report_error(usage_error("env build: the config (" + (config->source.empty() ? std::string("built-in defaults") : config->source) +
                                      ") has no environment: section"),
                          opt.json);
    }
    if (auto st = check_seed_dir(config->seed); !st) return report_error(st.error().context("env build"), opt.json);
    Config c = *config;
    auto st = resolve_environment(podman, &c, opt.rebuild, [](const std::string& line) { progress_line(line); });
    if (!st) {
      if (opt.json) {
        // An infra_error, like a failed sandbox: the step and its log in "error".
        return report_error(st.error(), true);
      }
      return report_error(st.error(), false);
    }
    const json j = environment_json(c.environment);
    if (opt.json) {
      std::cout << j.dump(2) << std::endl;
    } else {
      std::cout << c.environment.resolved.image << (c.environment.resolved.built ? " built" : " reused")
                << " (" << short_digest(c.environment.resolved.digest) << ")\n";
    }
    return 0;
  }

  auto images = podman.images_by_label(kEnvironmentRoleLabel);
  if (!images) return report_error(images.error(), opt.json);
  json rows = json::array();
  for (const auto& img : *images) {
    rows.push_back({{"image", env_tag(img)},
                    {"key", env_label_value(img, kEnvironmentKeyLabel)},
                    {"id", img.value("Id", "")},
                    {"base", env_label_value(img, "io.lazyagent.env.base")},
                    {"size", img.value("Size", 0L)},
                    {"created", img.value("Created", 0L)}});
  }
  if (opt.action == "list") {
    if (opt.json) {
      std::cout << json{{"environments", rows}}.dump(2) << std::endl;
    } else if (rows.empty()) {
      std::cout << "no environment images\n";
    } else {
      for (const auto& r : rows) {
        std::cout << escape_for_terminal(r["image"].get<std::string>()) << "  " << r["id"].get<std::string>().substr(0, 12)
                  << "  " << (r["size"].get<long>() >> 20) << " MiB  base " << escape_for_terminal(r["base"].get<std::string>())
                  << "\n";
      }
    }
    return 0;
  }

  // prune: everything but the config's own key (when it has one), unless --all.
  std::string keep;
  if (!opt.all) {
    auto config = load_config_or_default(opt.project.config);
    if (!config) return report_error(config.error(), opt.json);
    if (config->environment.present && !config->seed.empty()) {
      Config c = *config;
      auto inputs = read_environment_inputs(c.environment, c.seed);
      const std::string base = c.environment.base.empty() ? c.images.sandbox : c.environment.base;
      auto base_img = podman.image_inspect(base, "environment.base");
      if (inputs && base_img) keep = environment_key(c.environment, base, base_img->value("Id", ""), *inputs);
    }
  }
  json removed = json::array(), kept = json::array(), failed = json::array();
  for (const auto& r : rows) {
    const std::string key = r["key"].get<std::string>();
    const std::string what = r["image"].get<std::string>().empty() ? r["id"].get<std::string>() : r["image"].get<std::string>();
    if (!keep.empty() && key == keep) {
      kept.push_back(what);
      continue;
    }
    if (auto st = podman.image_remove(r["id"].get<std::string>()); !st) {
      failed.push_back({{"image", what}, {"error", st.error().message}});
    } else {
      removed.push_back(what);
    }
  }
  if (opt.json) {
    std::cout << json{{"removed", removed}, {"kept", kept}, {"failed", failed}}.dump(2) << std::endl;
  } else {
    for (const auto& r : removed) std::cout << "removed " << escape_for_terminal(r.get<std::string>()) << "\n";
    for (const auto& r : kept) std::cout << "kept " << escape_for_terminal(r.get<std::string>()) << " (the config's environment)\n";
    for (const auto& r : failed) {
      std::cerr << "lazyagent-oci: " << escape_for_terminal(r["error"].get<std::string>()) << "\n";
    }
  }
  return failed.empty() ? 0 : 5;
}

}  // namespace lazyagent
