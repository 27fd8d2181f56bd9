// `lazyagent-oci env build|list|prune`: the project's test image
// (environment.h), and use_environment for test, run and eval.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/engine.h"
#include "engine/environments.h"
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
  BackendOptions backend;
  bool rebuild = false;
  bool all = false;
  bool json = false;
};

// The engine's environments (environments.h), or the engine's word on why
// it has none.
Result<std::unique_ptr<Engine>> environment_engine(const Config& config, const BackendOptions& backend) {
  auto factory = engine_factory(backend, config, default_run_store());
  if (!factory) return factory.error();
  return (*factory)();
}

}  // namespace

Status use_environment(Config* config, const BackendOptions& backend, bool rebuild) {
  if (!config->environment.present) return ok_status();
  auto engine = environment_engine(*config, backend);
  if (!engine) return engine.error();
  auto envs = (*engine)->environments();
  if (!envs) return envs.error();
  return (*envs)->resolve(config, rebuild, [](const std::string& line) { progress_line(line); });
}

int cmd_env(const std::vector<std::string>& args) {
  EnvOptions opt;
  ArgParser p("env", "build [--seed DIR] [--config FILE] [--rebuild] [--json] | list [--json] | prune [--all] [--config FILE] [--json]\n"
              "            [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE]",
              "The project's test image, from the config's `environment:` (base + setup + inputs): built\n"
              "with network in a set-up container (no secrets, the inputs copied in, the seed never\n"
              "mounted), committed as localhost/lazyagent-env:<key>, where the key hashes the base image,\n"
              "the set-up and the inputs' contents. test, run and eval build it on first use and reuse it.\n"
              "list: the environment images; prune: remove them, except the config's own (unless --all).");
  p.positional("ACTION", &opt.action, true, "build, list or prune", {"build", "list", "prune"});
  p.option("--seed", &opt.project.seed, "DIR", "build: the project (default: the config's seed)");
  p.option("--config", &opt.project.config, "FILE", kConfigOptionHelp);
  p.flag("--rebuild", &opt.rebuild, "build: build even when the image exists");
  p.flag("--all", &opt.all, "prune: remove the config's own environment too");
  add_backend_options(p, &opt.backend);
  p.flag("--json", &opt.json, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (opt.action != "build" && opt.action != "list" && opt.action != "prune") {
    return report_error(usage_error("env: unknown action '" + opt.action + "' (build, list or prune)"), opt.json);
  }
  // The engine that builds and keeps the images (environments.h); one that
  // cannot says why.
  auto engine_config = load_config_or_default(opt.project.config);
  if (!engine_config) return report_error(engine_config.error(), opt.json);
  auto engine = environment_engine(*engine_config, opt.backend);
  if (!engine) return report_error(engine.error(), opt.json);
  auto envs = (*engine)->environments();
  if (!envs) return report_error(envs.error(), opt.json);
  Environments& environments = **envs;

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
    auto st = environments.resolve(&c, opt.rebuild, [](const std::string& line) { progress_line(line); });
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
      const auto& env = c.environment.resolved;
      std::cout << env.image << (env.built ? " built" : " reused") << " ("
                << (env.id.empty() || env.id == env.digest ? "" : image_hash_text(env.id) + ", ")
                << image_hash_text(env.digest) << ")\n";
    }
    return 0;
  }

  auto listed = environments.list();
  if (!listed) return report_error(listed.error(), opt.json);
  const json& rows = *listed;
  if (opt.action == "list") {
    if (opt.json) {
      std::cout << json{{"environments", rows}}.dump(2) << std::endl;
    } else if (rows.empty()) {
      std::cout << "no environment images\n";
    } else {
      for (const auto& r : rows) {
        std::cout << escape_for_terminal(r["image"].get<std::string>()) << "  " << image_hash_text(r["id"].get<std::string>())
                  << "  " << (r["size"].get<long>() >> 20) << " MiB  base " << escape_for_terminal(r["base"].get<std::string>())
                  << "\n";
      }
    }
    return 0;
  }

  // prune: everything but the config's own key (when it has one), unless --all.
  std::string keep;
  if (!opt.all) keep = environments.current_key(*engine_config);
  json removed = json::array(), kept = json::array(), failed = json::array();
  for (const auto& r : rows) {
    const std::string key = r["key"].get<std::string>();
    const std::string what = r["image"].get<std::string>().empty() ? r["id"].get<std::string>() : r["image"].get<std::string>();
    if (!keep.empty() && key == keep) {
      kept.push_back(what);
      continue;
    }
    if (auto st = environments.remove(r["id"].get<std::string>()); !st) {
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
