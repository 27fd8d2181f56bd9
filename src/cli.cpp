#include "cli.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli_args.h"
#include "interrupt.h"
#include "patch_contract.h"
#include "podman_client.h"
#include "runtime_engine.h"
#include "runtime_policy.h"
#include "terminal_text.h"

#include <nlohmann/json.hpp>

namespace lazyagent {

namespace {

int cmd_version(const std::vector<std::string>&) {
  std::cout << "lazyagent-oci " << LAZYAGENT_VERSION << "\n";
  return 0;
}

int cmd_help(const std::vector<std::string>&);

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"run", "ask the model for a fix (planner container), then prove it in a sandbox", cmd_run},
      {"test", "prove a given patch against a seed project in a hardened sandbox", cmd_test},
      {"eval", "run a file of tasks (patches or instructions) concurrently, resumably; summary by category", cmd_eval},
      {"configure", "store the provider's base URL, model and API key as podman secrets", cmd_configure},
      {"secret", "list or delete the provider secrets (names and dates only)", cmd_secret},
      {"task", "show a planner task, or its log", cmd_task},
      {"sandboxes", "list recent sandbox runs and whether their containers still exist", cmd_sandboxes},
      {"reap", "remove containers and private copies left by crashed runs", cmd_reap},
      {"export", "write the sandbox policy as an OCI bundle, a podman-compose stack or Kubernetes Jobs", cmd_export},
      {"verify", "recompute a run record's hashes and say whether it still matches", cmd_verify},
      {"diff", "print a run's proven change as a unified diff against its seed", cmd_diff},
      {"apply", "write a passed run's change into your work tree (optionally on a new git branch)", cmd_apply},
      {"seed", "show what a run takes from a seed (git work tree or directory), and how long it takes", cmd_seed},
      {"doctor", "check podman, the runtime, the images and this host's quirks", cmd_doctor},
      {"provider-stub", "serve a scripted OpenAI-compatible provider (a stand-in, not a model)", cmd_provider_stub},
      {"plan", "the planner itself, run inside the planner container", cmd_plan},
      {"version", "print the version", cmd_version},
      {"help", "show this help", cmd_help},
  };
  return table;
}

namespace {

int cmd_help(const std::vector<std::string>&) {
  std::cout << "usage: lazyagent-oci COMMAND [OPTIONS]\n\n"
               "Run an LLM coding agent's patch without trusting it: the patch is proven in an\n"
               "OCI container with no network, no secrets, hard caps, always removed.\n\ncommands:\n";
  for (const auto& c : commands()) {
    std::string n = c.name;
    std::cout << "  " << n << std::string(15 - std::min<std::size_t>(14, n.size()), ' ') << c.summary << "\n";
  }
  std::cout << "\n`lazyagent-oci COMMAND --help` shows a command's options.\n"
               "exit codes: 0 passed, 1 tests failed, 2 usage/config, 3 planner/provider,\n"
               "            4 patch refused, 5 engine (podman), 128+N signal N\n";
  return 0;
}

}  // namespace

int exit_code_for(const Error& e) {
  switch (e.kind) {
    case ErrorKind::kUsage: return kExitUsage;
    case ErrorKind::kPlanner: return kExitPlanner;
    case ErrorKind::kPatch: return kExitRefused;
    case ErrorKind::kInterrupted: return 128 + (interrupted_signal() ? interrupted_signal() : 2);
    case ErrorKind::kEngine:
    case ErrorKind::kTimeout: return kExitEngine;
  }
  return kExitEngine;
}

int report_error(const Error& e, bool json) {
  const int code = exit_code_for(e);
  if (json) {
    static const char* kinds[] = {"usage", "planner", "patch", "engine", "timeout", "interrupted"};
    nlohmann::json j = {{"error", to_valid_utf8(e.message)},
                        {"error_kind", kinds[static_cast<int>(e.kind)]},
                        {"exit_code", code}};
    // An engine failure is not a test failure (triage_run.h).
    if (e.kind == ErrorKind::kEngine || e.kind == ErrorKind::kTimeout) {
      j["category"] = e.message.find("the isolation probe inside the sandbox found: ") != std::string::npos
                          ? "isolation_violation" : "infra_error";
    }
    std::cout << j.dump(2) << std::endl;
  }
  std::cerr << "lazyagent-oci: " << escape_for_terminal(e.message) << "\n";
  return code;
}

Result<std::string> read_patch_file(const std::string& path) {
  // The largest text any patch can be under the hard caps; the contract
  // judges the configured limits with their own messages.
  ContractLimits widest;
  widest.max_bytes = kMaxPatchBytesCap;
  widest.max_diff_bytes = kMaxDiffBytesCap;
  const std::size_t max = max_patch_text_bytes(widest);
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return usage_error("--patch " + path + ": cannot open the file");
    in = &file;
  }
  std::string data;
  char buf[65536];
  while (in->read(buf, sizeof buf) || in->gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in->gcount()));
    if (data.size() > max) {
      return Error{ErrorKind::kPatch, "--patch " + path + ": the file is larger than " + std::to_string(max) +
                                          " bytes, more than any patch may be (patch.max_bytes and "
                                          "patch.max_diff_bytes stop at " + std::to_string(kMaxPatchBytesCap) + ")"};
    }
  }
  return data;
}

Result<Config> load_config_or_default(const std::string& path) {
  const std::string chosen = path.empty() ? default_config_path() : path;
  if (chosen.empty()) return Config{};
  return load_config_file(chosen);
}

Result<std::string> podman_socket_from_env() {
  return resolve_podman_socket(std::getenv("CONTAINER_HOST"), getuid(), std::getenv("XDG_RUNTIME_DIR"));
}

Result<std::string> podman_socket_for_runtime(const Config& config) {
  return resolve_runtime_socket(config.engine.runtime, config.engine, std::getenv("LAZYAGENT_RUNSC_HOST"),
                                std::getenv("CONTAINER_HOST"), getuid(), std::getenv("XDG_RUNTIME_DIR"));
}

Status apply_runtime_options(const std::string& runtime, bool accept_weaker, Config* config) {
  if (!runtime.empty()) {
    if (runtime != kRuntimeRunc && runtime != kRuntimeRunsc) {
      return usage_error("--runtime " + runtime + ": expected runc or runsc");
    }
    config->engine.runtime = runtime;
  }
  if (accept_weaker) config->engine.accept_weaker_policy = true;
  return check_policy_acceptable(*config);
}

RunStore default_run_store() {
  return RunStore(default_state_dir(std::getenv("XDG_STATE_HOME"), std::getenv("HOME")));
}

std::optional<int> parse_or_exit(ArgParser& parser, const std::vector<std::string>& args) {
  if (auto st = parser.parse(args); !st) return report_error(st.error(), false);
  if (parser.help_requested()) {
    std::cout << parser.help_text();
    return 0;
  }
  return std::nullopt;
}

void progress_line(const std::string& text) {
  std::cerr << "==> " << escape_for_terminal(text) << std::endl;
}

int run_cli(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") return cmd_help({});
  if (args[0] == "--version") return cmd_version({});
  for (const auto& c : commands()) {
    if (args[0] == c.name) {
      install_interrupt_handlers();
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
  }
  std::cerr << "lazyagent-oci: unknown command '" << escape_for_terminal(args[0])
            << "' (see `lazyagent-oci --help`)\n";
  return kExitUsage;
}

}  // namespace lazyagent
