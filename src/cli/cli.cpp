#include "cli/cli.h"

#include <algorithm>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/cli_args.h"
#include "cli/command_shapes.h"
#include "cli/completion_scripts.h"
#include "cli/session_command.h"
#include "contract/patch_contract.h"
#include "engine/k8s/k8s_engine.h"
#include "engine/k8s/kubeconfig.h"
#include "engine/podman/podman_client.h"
#include "engine/podman/podman_engine.h"
#include "pipeline/run_result.h"
#include "engine/podman/runtime_engine.h"
#include "policy/runtime_policy.h"
#include "policy/sandbox_policy.h"
#include "util/interrupt.h"
#include "util/terminal_text.h"

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
      {"report", "write an eval's results as one self-contained HTML page (charts, filters, every task)", cmd_report},
      {"configure", "store the provider's base URL, model and API key as podman secrets", cmd_configure},
      {"secret", "list or delete the provider secrets (names and dates only)", cmd_secret},
      {"task", "show a planner task, or its log", cmd_task},
      {"sandboxes", "list recent sandbox runs and whether their containers still exist", cmd_sandboxes},
      {"warm", "make warm spares: sandboxes created and verified before their patch exists", cmd_warm},
      {"reap", "remove containers and private copies left by crashed runs, close their records", cmd_reap},
      {"export", "write the sandbox policy as an OCI bundle, a podman-compose stack or Kubernetes Jobs", cmd_export},
      {"verify", "recompute a run record's hashes; with --key, check a signed verdict offline", cmd_verify},
      {"attestation", "print a run's signed verdict (a DSSE envelope over an in-toto statement)", cmd_attestation},
      {"keygen", "make an Ed25519 key pair for signed verdicts (--sign-key, signing.key)", cmd_keygen},
      {"diff", "print a run's proven change as a unified diff against its seed", cmd_diff},
      {"apply", "write a passed run's change into your work tree (optionally on a new git branch)", cmd_apply},
      {"env", "build, list or prune the project's test image (config environment: base + setup + inputs)", cmd_env},
      {"seed", "show what a run takes from a seed (git work tree or directory), and how long it takes", cmd_seed},
      {"session", "an agent's working copy: exec commands in fresh sandboxes, diff, prove (open, exec, ..., close)", cmd_session},
      {"mcp", "serve the Model Context Protocol on stdio: test_patch, run_task and more for coding agents", cmd_mcp},
      {"doctor", "check podman, the runtime, the images and this host's quirks", cmd_doctor},
      {"images", "list or build the images the tool itself needs (base, sandbox, planner, egress proxy)", cmd_images},
      {"provider-stub", "serve a scripted OpenAI-compatible provider (a stand-in, not a model)", cmd_provider_stub},
      {"plan", "the planner itself, run inside the planner container", cmd_plan},
      {"completion", "print a shell's completion script (bash, zsh, fish), made from these commands' options", cmd_completion},
      {"version", "print the version", cmd_version},
      {"help", "show this help (--man: the manual page in roff)", cmd_help},
  };
  return table;
}

namespace {

void print_help(std::ostream& o) {
  o << "usage: lazyagent-oci COMMAND [OPTIONS]\n\n"
       "Run an LLM coding agent's patch without trusting it: the patch is proven in an\n"
       "OCI container with no network, no secrets, hard caps, always removed.\n\ncommands:\n";
  for (const auto& c : commands()) {
    std::string n = c.name;
    o << "  " << n << std::string(15 - std::min<std::size_t>(14, n.size()), ' ') << c.summary << "\n";
  }
  o << "\n`lazyagent-oci COMMAND --help` shows a command's options.\n"
       "exit codes: 0 passed, 1 tests failed, 2 usage/config, 3 planner/provider,\n"
       "            4 patch refused, 5 engine (podman), 128+N signal N\n";
}

int cmd_help(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "--man") {  // lazyagent-oci(1): the build writes it (completion_scripts.h)
    std::cout << man_page(command_shapes(), LAZYAGENT_VERSION);
    return 0;
  }
  print_help(std::cout);
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
    case ErrorKind::kUnreachable:
    case ErrorKind::kTimeout:
    case ErrorKind::kIsolation: return kExitEngine;
  }
  return kExitEngine;
}

namespace {

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

// What an interruption left is asked of the engine this process made
// (Engine::left_by_process), through the last factory engine_factory
// returned: the one the command ran with. None made: nothing to ask.
EngineFactory& interrupted_engine_factory() {
  static EngineFactory factory;
  return factory;
}

Result<std::vector<std::string>> left_by_this_process() {
  const EngineFactory& factory = interrupted_engine_factory();
  if (!factory) return std::vector<std::string>{};
  return factory()->left_by_process(::getpid());
}

std::string interrupted_message(const std::string& removed_what) {
  const int sig = interrupted_signal() != 0 ? interrupted_signal() : SIGINT;
  const std::string head = "interrupted by " + signal_name(sig);
  auto left = left_by_this_process();
  if (!left) return head + "; could not check that its sandboxes were removed: " + left.error().message;
  if (left->empty()) return head + "; " + removed_what;
  std::string names;
  for (const auto& n : *left) names += (names.empty() ? "" : ", ") + n;
  return head + "; " + std::to_string(left->size()) + " container(s) could not be removed (" + names +
         "): `lazyagent-oci reap` removes them";
}

}  // namespace

int report_error(const Error& e, bool json, const std::string& removed_what) {
  return report_error_exiting(e, json, exit_code_for(e), removed_what);
}

int report_refusal(const Error& e, bool json) {
  return report_error_exiting(e, json, e.kind == ErrorKind::kPatch ? kExitFailed : exit_code_for(e));
}

int report_error_exiting(const Error& e, bool json, int code, const std::string& removed_what) {
  Error shown = e;
  if (e.kind == ErrorKind::kInterrupted) shown.message = interrupted_message(removed_what);
  if (json) {
    nlohmann::json j = {{"error", to_valid_utf8(shown.message)},
                        {"error_kind", error_kind_name(e.kind)},
                        {"exit_code", code}};
    if (e.kind == ErrorKind::kInterrupted) j["detail"] = to_valid_utf8(e.message);
    if (is_retryable(e)) j["retryable"] = true;
    // The ids that exist by then (run_id, planner_task_id, sandbox_id): what
    // `task show`, `task logs` and `verify` take.
    for (const auto& [k, v] : e.ids) j[k] = v;
    // An engine failure is not a test failure (triage_run.h).
    if (const Category c = category_of(e); c != Category::kNone) j["category"] = category_name(c);
    std::cout << j.dump(2) << std::endl;
  }
  std::cerr << "lazyagent-oci: " << escape_for_terminal(shown.message) << "\n";
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

std::string chosen_config_path(const std::string& path) { return path.empty() ? default_config_path() : path; }

Result<Config> load_config_or_default(const std::string& path) {
  const std::string chosen = chosen_config_path(path);
  if (chosen.empty()) return Config{};
  return load_config_file(chosen);
}

void add_project_options(ArgParser& p, ProjectOptions* o) {
  p.option("--seed", &o->seed, "DIR", "the project (default: the config's seed)");
  p.repeated("--allow", &o->allow, "PATH", "a path the patch may change (repeat; replaces the config's list)");
  p.option("--test-command", &o->test_command, "CMD", "the command run in the project's copy (default: the config's)");
  p.option("--config", &o->config, "FILE", kConfigOptionHelp);
}

Result<Config> project_config(const ProjectOptions& o, const std::string& command) {
  auto config = load_config_or_default(o.config);
  if (!config) return config.error();
  if (!o.seed.empty()) config->seed = o.seed;
  if (!o.allow.empty()) config->allow = o.allow;
  if (!o.test_command.empty()) config->test_command = o.test_command;
  if (chosen_config_path(o.config).empty()) {
    // No config file: the built-in defaults were made for the demo (allow
    // calculator.py), and a patch to anything else would be refused with no
    // word on where that list came from.
    std::string allow;
    for (const auto& a : config->allow) allow += (allow.empty() ? "" : ", ") + a;
    progress_line(command + ": no config file found (--config FILE, $LAZYAGENT_CONFIG, ./config/lazyagent.yaml, "
                  "the installed share/lazyagent-oci/config/lazyagent.yaml): the built-in defaults apply; allow list: " +
                  (allow.empty() ? std::string("(empty)") : allow) +
                  (o.allow.empty() ? " (the default: pass --allow PATH or a config)" : " (--allow)"));
  }
  if (config->seed.empty()) {
    // Which config was read: the usual cause is a command run from another
    // directory, where the default config is not found.
    const std::string path = chosen_config_path(o.config);
    return usage_error(command + ": no seed: pass --seed DIR or set `seed` in the config (" +
                       (path.empty() ? std::string("no config file was found: pass --config FILE") : "read " + path) +
                       ")");
  }
  return config;
}

void add_sign_key_option(ArgParser& p, std::string* path) {
  p.option("--sign-key", path, "FILE",
           "sign the verdict with this Ed25519 private key (PKCS#8 PEM, mode 0600; default: the config's "
           "signing.key): a DSSE envelope over an in-toto statement, `attestation` in the result");
}

Status key_outside_seed(const std::string& key, const std::string& seed, const std::string& what) {
  // The seed is copied into the sandbox: a key inside it would go along.
  if (seed.empty()) return ok_status();
  std::error_code ec1, ec2;
  const std::string real_key = std::filesystem::weakly_canonical(key, ec1).string();
  const std::string real_seed = std::filesystem::weakly_canonical(seed, ec2).string();
  if (ec1 || ec2 || real_key.rfind(real_seed + "/", 0) != 0) return ok_status();
  return usage_error(what + " " + key + ": the private key is inside the seed " + seed +
                     ", which is copied into the sandbox: keep the key outside the project");
}

Result<std::shared_ptr<const SigningKey>> signing_key_for(const std::string& flag, const Config& config) {
  const std::string path = flag.empty() ? config.signing.key : flag;
  if (path.empty()) return std::shared_ptr<const SigningKey>();
  const std::string what = flag.empty() ? "signing.key" : "--sign-key";
  if (auto st = key_outside_seed(path, config.seed, what); !st) return st.error();
  auto key = SigningKey::load(path, what);
  if (!key) return key.error();
  return std::shared_ptr<const SigningKey>(std::make_shared<SigningKey>(std::move(*key)));
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
    if (runtime != kRuntimeRunc && runtime != kRuntimeCrun && runtime != kRuntimeRunsc) {
      return usage_error("--runtime " + runtime + ": expected runc, crun or runsc");
    }
    config->engine.runtime = runtime;
    config->engine.runtime_explicit = true;
  }
  if (accept_weaker) config->engine.accept_weaker_policy = true;
  return check_policy_acceptable(*config);
}

void add_backend_options(ArgParser& p, BackendOptions* o) {
  p.option("--backend", &o->backend, "BACKEND", "podman (default) or k8s: where sandboxes and planners run");
  p.choices("--backend", {"podman", "k8s"});
  p.option("--namespace", &o->ns, "NS", "with --backend k8s: namespace (default: the config's k8s.namespace)");
  p.option("--kubeconfig", &o->kubeconfig, "FILE",
           "with --backend k8s: kubeconfig file (default: $KUBECONFIG, the pod's service account, ~/.kube/config)");
}

Status check_backend_options(const BackendOptions& o) {
  if (o.backend != "podman" && o.backend != "k8s") {
    return usage_error("--backend must be podman or k8s, got '" + o.backend + "'");
  }
  if (o.backend == "podman" && (!o.ns.empty() || !o.kubeconfig.empty())) {
    return usage_error("--namespace and --kubeconfig need --backend k8s");
  }
  return ok_status();
}

namespace {

Result<EngineFactory> make_engine_factory(const BackendOptions& o, const Config& config, const RunStore& store) {
  if (auto st = check_backend_options(o); !st) return st.error();
  if (o.backend == "k8s") {
    if (config.engine.runtime != kRuntimeRunc) {
      return usage_error("--backend k8s: the runtime '" + config.engine.runtime +
                         "' is podman's choice; on Kubernetes the sandbox pod's runtime is the config's "
                         "k8s.runtime_class");
    }
    auto conn = resolve_k8s_connection(o.kubeconfig);
    if (!conn) return conn.error();
    K8sRunSettings settings = k8s_settings_from_config(config);
    if (!o.ns.empty()) settings.ns = o.ns;
    // Environments are built by the local podman service (the runc one: a
    // build needs a network), as on podman, then pushed to k8s.registry.
    std::string local;
    if (auto sock = podman_socket_from_env(); sock) local = *sock;
    return EngineFactory([conn = *conn, settings, store, local] {
      auto engine = std::make_unique<K8sEngine>(std::make_unique<K8sClient>(conn), settings, store);
      if (!local.empty()) {
        engine->set_environment_builder([local, store] {
          return std::unique_ptr<Engine>(
              std::make_unique<PodmanEngine>(std::make_unique<PodmanClient>(local), nullptr, store, ""));
        });
      }
      return std::unique_ptr<Engine>(std::move(engine));
    });
  }
  auto sandbox = podman_socket_for_runtime(config);
  if (!sandbox) return sandbox.error();
  auto planner = podman_socket_from_env();
  if (!planner) return planner.error();
  // The runtime as asked for: "" (not set) is whatever the service runs, runc or crun.
  const std::string requested =
      config.engine.runtime_explicit || config.engine.runtime == kRuntimeRunsc ? config.engine.runtime : "";
  return EngineFactory([sandbox = *sandbox, planner = *planner, store, runtime = requested,
                        interval = o.podman_wait_interval] {
    auto s = std::make_unique<PodmanClient>(sandbox);
    if (!interval.empty()) s->set_wait_interval(interval);
    // The planner needs a network: the runc service, a client of its own when the sandbox's is another.
    auto p = planner == sandbox ? nullptr : std::make_unique<PodmanClient>(planner);
    return std::unique_ptr<Engine>(std::make_unique<PodmanEngine>(std::move(s), std::move(p), store, runtime));
  });
}

}  // namespace

Result<EngineFactory> engine_factory(const BackendOptions& o, const Config& config, const RunStore& store) {
  auto factory = make_engine_factory(o, config, store);
  if (factory) interrupted_engine_factory() = *factory;
  return factory;
}

RunStore default_run_store() {
  return RunStore(default_state_dir(std::getenv("XDG_STATE_HOME"), std::getenv("HOME")));
}

std::optional<int> parse_or_exit(ArgParser& parser, const std::vector<std::string>& args) {
  if (record_shape(parser)) return 0;  // command_shapes() asked: the parser is all it wanted
  if (auto st = parser.parse(args); !st) {
    // A machine that asked for JSON gets its error as JSON too, whatever
    // else on the line was wrong (the flag may come after the bad one).
    const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
    return report_error(st.error(), json);
  }
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
  if (args.empty()) {  // a usage error like any other: help on stderr, exit 2
    print_help(std::cerr);
    std::cerr << "\nlazyagent-oci: no command given\n";
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h") return cmd_help({});
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
