// The command-line interface: one table of subcommands, each with its own
// options struct and parser (STYLE.md principle 10). Only this layer turns an
// Error into an exit code, and only main() returns it.
//
// Exit codes (documented in docs/usage.md):
//   0 tests passed (or the command succeeded)   1 tests failed
//   2 usage or config error                     3 planner/provider error
//   4 patch refused                             5 engine (podman) error
//   128+N interrupted by signal N (130 for SIGINT, 143 for SIGTERM)
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attest/signing_key.h"
#include "config.h"
#include "util/result.h"
#include "store/run_store.h"

namespace lazyagent {

inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPlanner = 3;
inline constexpr int kExitRefused = 4;
inline constexpr int kExitEngine = 5;

// The --config option's help, the same for every command.
inline constexpr const char* kConfigOptionHelp =
    "config file (default: $LAZYAGENT_CONFIG, else ./config/lazyagent.yaml, else the installed "
    "share/lazyagent-oci/config/lazyagent.yaml)";

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

const std::vector<Command>& commands();

int run_cli(int argc, char** argv);

// Shared by subcommands ------------------------------------------------------

int exit_code_for(const Error& e);
// Prints "lazyagent-oci: <message>" (escaped) to stderr, or the JSON error
// object to stdout when json is set; returns the exit code. The JSON object
// carries the error's ids (run_id, planner_task_id, sandbox_id). An
// interruption (SIGINT/SIGTERM) is said as what the user needs to know:
// "interrupted by SIGINT; <removed_what>", after checking with podman that no
// container of this process is left (else it names them); the low-level
// message goes to the JSON's `detail`.
int report_error(const Error& e, bool json,
                 const std::string& removed_what = "every container it started was removed");
// As report_error, exiting with `code` (and saying so in the JSON's exit_code).
int report_error_exiting(const Error& e, bool json, int code,
                         const std::string& removed_what = "every container it started was removed");
// For apply and diff: a refusal (a kPatch error: a run that did not pass, a
// changed tree, a record or diff edited after the run) exits 1, not 4.
int report_refusal(const Error& e, bool json);

Result<Config> load_config_or_default(const std::string& path);
// The config file load_config_or_default reads for this --config value: the
// value itself, else the default search (config.h); "" when none was found
// (the built-in defaults apply).
std::string chosen_config_path(const std::string& path);

class ArgParser;

// --config FILE, --seed DIR, --allow PATH..., --test-command CMD: the project
// a command works on (test, run, export), over the config's values.
struct ProjectOptions {
  std::string config;
  std::string seed;
  std::vector<std::string> allow;
  std::string test_command;
};
void add_project_options(ArgParser& parser, ProjectOptions* options);
// The config (--config, else the default one) with the flags applied; a
// usage error "COMMAND: no seed: ..." when neither names a seed.
Result<Config> project_config(const ProjectOptions& options, const std::string& command);
Result<std::string> podman_socket_from_env();
// The podman service for the sandbox's runtime (runtime_engine.h).
Result<std::string> podman_socket_for_runtime(const Config& config);
// --runtime and --accept-weaker-policy of `test` and `run`, applied to the
// config; a usage error for an unknown runtime or an unacceptable policy.
Status apply_runtime_options(const std::string& runtime, bool accept_weaker, Config* config);
RunStore default_run_store();
// --sign-key FILE of test, run, eval and session prove (signed verdicts,
// docs/signing.md).
void add_sign_key_option(ArgParser& parser, std::string* path);
// The key a command signs with: the flag's file, else the config's
// signing.key, else none (null). A key that is unreadable, not Ed25519, or
// readable by others is a usage error naming what to do.
Result<std::shared_ptr<const SigningKey>> signing_key_for(const std::string& flag, const Config& config);
// A usage error when `key` lies inside `seed` (which is copied into the sandbox).
Status key_outside_seed(const std::string& key, const std::string& seed, const std::string& what);
// The --patch FILE of test and export ("-" reads stdin), at most 1 MiB.
Result<std::string> read_patch_file(const std::string& path);

class ArgParser;
// Parses a command's arguments. Returns an exit code when the command should
// stop here (after printing --help: 0; after a usage error: 2), else nullopt.
std::optional<int> parse_or_exit(ArgParser& parser, const std::vector<std::string>& args);

// "==> step" lines on stderr.
void progress_line(const std::string& text);

struct RunResult;
// Prints a test/run result (JSON or human) and returns its exit code;
// `removed_what` as for report_error.
int finish_result(const Result<RunResult>& result, bool json,
                  const std::string& removed_what = "the sandbox was removed");

// --report junit:PATH of `test` and `run`: the per-test results as JUnit XML at
// PATH on this machine. Anything but junit:PATH is a usage error naming it.
Status check_report_option(const std::string& command, const std::string& spec);
// Writes the report after the verdict; a file that cannot be written is said
// on stderr, and the verdict and its exit code stand.
void write_report(const std::string& command, const std::string& spec, const RunResult& result);

// --backend podman|k8s (with --namespace NS and --kubeconfig FILE for k8s):
// which engine (engine.h) runs the sandboxes and planners of test, run, eval
// and reap. Everything else about those commands is the same on both.
struct BackendOptions {
  std::string backend = "podman";
  std::string ns;          // k8s: default the config's k8s.namespace
  std::string kubeconfig;  // k8s: default $KUBECONFIG, the pod's service account, ~/.kube/config
  std::string podman_wait_interval;  // podman: how often wait polls ("" = the client's default)
};
void add_backend_options(ArgParser& parser, BackendOptions* options);
// A backend name and flags that go together (usage errors); engine_factory checks this too.
Status check_backend_options(const BackendOptions& options);
class Engine;
class WarmPool;
using EngineFactory = std::function<std::unique_ptr<Engine>()>;
// Checks the options and resolves the connection once; each call of the
// factory then makes an engine with its own connection. Podman: sandboxes on
// the service of config.engine.runtime, planners on the runc service.
// Kubernetes: the config's k8s settings, --namespace over k8s.namespace; a
// config asking for runsc is refused (the pod's runtime is k8s.runtime_class).
Result<EngineFactory> engine_factory(const BackendOptions& options, const Config& config, const RunStore& store);

// What `sandboxes N --json` prints: the N most recent runs of `store`, each
// with whether the engine of `backend` (made from the config at
// `config_path`) still has its sandbox, when the run was that engine's
// (Engine::sandbox_exists; null when unknown), and that engine's warm spares
// (the MCP tool list_sandboxes too, on podman).
nlohmann::json sandboxes_json(const RunStore& store, std::size_t n, const BackendOptions& backend = {},
                              const std::string& config_path = "");

// Command entry points (one file each).
int cmd_test(const std::vector<std::string>& args);
int cmd_sandboxes(const std::vector<std::string>& args);
int cmd_reap(const std::vector<std::string>& args);
int cmd_doctor(const std::vector<std::string>& args);
int cmd_images(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_plan(const std::vector<std::string>& args);
int cmd_configure(const std::vector<std::string>& args);
int cmd_secret(const std::vector<std::string>& args);
int cmd_task(const std::vector<std::string>& args);
int cmd_provider_stub(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_verify(const std::vector<std::string>& args);
int cmd_keygen(const std::vector<std::string>& args);
int cmd_attestation(const std::vector<std::string>& args);
// `verify --key PUB FILE ...` (cmd_attestation.cpp): a signed verdict checked offline.
int verify_envelope_command(const std::string& key_path, const std::string& file, const std::string& patch,
                            const std::string& seed, bool require_passed, bool as_json);
int cmd_eval(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_diff(const std::vector<std::string>& args);
int cmd_apply(const std::vector<std::string>& args);
int cmd_seed(const std::vector<std::string>& args);
int cmd_env(const std::vector<std::string>& args);
int cmd_warm(const std::vector<std::string>& args);
int cmd_mcp(const std::vector<std::string>& args);
int cmd_completion(const std::vector<std::string>& args);

inline constexpr const char* kRefillLockName = "refill.lock";
// What `test` and `run` do after printing their result: the sandboxes whose
// removal was deferred (Engine::defer_removals, engine.warm > 0) are removed
// and warm spares made for sandboxes of `config` (sandbox_run.h keep_warm) by
// a child process of its own session (no terminal, none of the caller's
// pipes) while the caller returns at once. The child holds an flock on
// RUNSTORE/refill.lock until done; when another refill holds it, this
// process removes its sandboxes itself and makes no spare. Without
// engine.warm: only finish_removals (nothing was deferred).
void after_result(const Config& config, long timeout_seconds, const EngineFactory& factory, Engine& engine);
// Forks a child in its own session with stdin/out/err on /dev/null, to which
// the pool's deferred removals belong: returns 0 in the child, the child's
// pid in the parent (which forgets them); -1 when fork failed (the removals
// are then done before it returns).
pid_t fork_detached(WarmPool& pool);

// The config's environment (environment.h), built on first use with its
// progress on stderr, then reused: sets config->images.sandbox to it. A
// failed set-up step is an engine error (infra_error) with the step's log.
// No-op without an `environment:` section; an engine that cannot build one
// says so (Engine::environments).
Status use_environment(Config* config, const BackendOptions& backend, bool rebuild = false);

}  // namespace lazyagent
