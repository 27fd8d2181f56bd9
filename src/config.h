// Typed configuration, loaded from YAML (config/lazyagent.yaml by default).
//
// Unknown keys are errors, not warnings: podman silently ignores misspelled
// settings (ARCHITECTURE section 5), and we refuse to repeat that mistake.
// Every error names the key path, e.g.
//   "config/lazyagent.yaml: limits.memory_mib: expected a positive integer, got 'lots'".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

struct ImagesConfig {
  std::string sandbox = "localhost/lazyagent-sandbox:latest";
  std::string planner = "localhost/lazyagent-planner:latest";
};

// Resource caps for the test sandbox. Defaults are the documented policy.
struct LimitsConfig {
  std::int64_t memory_mib = 512;
  std::int64_t pids = 256;
  double cpus = 1.0;
  std::int64_t nofile = 1024;
  std::int64_t nproc = 256;
  std::int64_t work_tmpfs_mib = 64;      // the working copy (/work)
  std::int64_t tmp_tmpfs_mib = 64;       // /tmp
  std::int64_t log_bytes = 1024 * 1024;  // output kept from the sandbox
  // Key paths of the limits the config file set explicitly ("limits.memory_mib"):
  // those are demands, refused under a runtime that cannot enforce them
  // (runtime_policy.h) unless engine.accept_weaker_policy.
  std::vector<std::string> set_in_config;
};

struct TimeoutsConfig {
  std::int64_t test_seconds = 120;     // host-side deadline for one sandbox run
  std::int64_t planner_seconds = 600;  // host-side deadline for the planner container
};

// The patch contract's limits (patch_contract.h): the defaults are the origin
// guide's; each may be raised up to its hard cap (kMax*Cap below).
inline constexpr std::size_t kMaxPatchFilesCap = 1000;
inline constexpr std::size_t kMaxPatchBytesCap = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxDiffBytesCap = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxChangedLinesCap = 200000;
struct PatchLimitsConfig {
  std::int64_t max_files = 3;              // files a patch changes, up to 1000
  std::int64_t max_bytes = 12000;          // content the model writes, up to 4 MiB
  std::int64_t max_diff_bytes = 12000;     // a unified diff's text, up to 4 MiB
  std::int64_t max_changed_lines = 1000;   // a diff's added + removed lines, up to 200000
  // What the planner asks the model for: whole files ("files") or a unified
  // diff ("diff"). Either form is accepted from any source (patch_format.h).
  std::string format = "files";
  // What suspicious findings do (suspicious_code.h): "flag" (reported in the
  // result, the default) or "refuse" (the patch is refused, exit 4).
  std::string suspicious = "flag";
};

// How the seed is read (seed_source.h). `seed` in the file is either the
// path alone or a mapping with `path` and these keys.
struct SeedConfig {
  std::string source = "auto";        // auto (git when the seed has .git), git, directory
  std::vector<std::string> exclude;   // globs (path_glob.h), left out of snapshot, copy and view
  bool include_git = false;           // also copy .git/ (tests that need git metadata)
  std::int64_t max_files = 100000;    // entries, up to 10,000,000
  std::int64_t max_bytes = std::int64_t{2} << 30;  // file content, up to 1 TiB
};

// Names of the podman secrets that carry the provider settings, and of the
// environment variables `configure` reads them from.
struct ProviderConfig {
  std::string base_url_secret = "CODING_AGENT_BASE_URL";
  std::string model_secret = "CODING_AGENT_MODEL";
  std::string api_key_secret = "CODING_AGENT_API_KEY";
  std::int64_t connect_timeout_seconds = 10;
  std::int64_t timeout_seconds = 120;  // one request, total
  std::int64_t max_retries = 3;        // on 429, 5xx and connection errors
  // The planner container's network: enough to reach the provider. "bridge"
  // reaches the internet and the host (host.containers.internal).
  std::string network = "bridge";
  // What the planner asks for (provider_client.h): "json_schema" (the patch
  // schema; falls back to json_object, then none, when the provider refuses),
  // "json_object" or "none".
  std::string response_format = "json_schema";
};

// The sandbox's user namespace: its uids/gids 0..size-1 are host ids
// host_id..host_id+size-1 (uid and gid alike). The default range starts at
// 0x70000000, above systemd's container range (524288..1879048191) and far
// above regular users and the usual /etc/subuid ranges (100000 + 65536 k),
// so that the sandbox's root is nobody on the host. `doctor` reports a host
// user or subordinate range that overlaps it.
struct UserNamespaceConfig {
  std::int64_t host_id = 1879048192;  // [65536..4294901759]
  std::int64_t size = 65536;          // [65536..16777216]: the image's ids (root, 1000, 65534)
};

struct EngineConfig {
  // The sandbox's OCI runtime: runc, crun or runsc (gVisor). Unless set
  // (engine.runtime, --runtime: runtime_explicit), runc and crun alike mean
  // "whatever the podman service runs", read from it (runtime_engine.h).
  std::string runtime = "runc";
  bool runtime_explicit = false;
  // The podman service that runs runsc sandboxes ($LAZYAGENT_RUNSC_HOST overrides).
  std::string runsc_socket = "/run/podman/lazyagent-runsc.sock";
  // Run even when the runtime cannot enforce a limit the config demands.
  bool accept_weaker_policy = false;
  // Warm spares (warm_spares.h) kept per policy: 0 = none.
  std::int64_t warm = 0;
  std::int64_t warm_ttl_seconds = 600;
};

// The repair loop of `run` and the re-runs of a failing verdict (agent_run.h,
// triage_run.h). CLI flags override these.
struct RepairConfig {
  std::int64_t attempts = 1;    // planner + sandbox rounds, stopping at the first pass
  std::int64_t max_tokens = 0;  // provider tokens over all attempts; 0 = no ceiling
  std::int64_t rerun = 0;       // re-runs of a failing verdict, to tell flaky tests
};

// The Kubernetes backend (`--backend k8s`, k8s_engine.h). Names are checked
// when a run uses them.
struct K8sConfig {
  std::string ns = "default";                     // namespace of the run's objects
  std::string secret = "lazyagent-provider";      // the provider Secret (keys base_url, model, api_key)
  std::string runtime_class = "lazyagent-nonet";  // the sandbox pod's RuntimeClass ("none" = none)
  // Opt-in to a provider reached over plain http from inside the cluster:
  // the planner pod resolves host.containers.internal to this address, so
  // base_url http://host.containers.internal:PORT/v1 reaches it. Empty =
  // https only. Named in every result that used it.
  std::string plain_http_provider_ip;
  // Seconds after a run's Job finishes before the cluster deletes it (and,
  // through the owner references, its ConfigMaps and NetworkPolicy): the
  // collection that does not rest on the CLI, for a run whose CLI was killed.
  std::int64_t ttl_seconds_after_finished = 3600;
  // What isolates the sandbox pod's network (docs/k8s-backend.md, "Isolation modes"):
  //   runtime-nonet  runtime_class has no network at all (the local
  //                  cluster's lazyagent-nonet): the probe demands only lo
  //   runtimeclass   runtime_class is the user's (gvisor, kata, ...), plus
  //                  the deny-all NetworkPolicy: judged by the egress probe
  //   networkpolicy  no RuntimeClass; the CNI enforces the deny-all
  //                  NetworkPolicy: judged by the egress probe
  std::string isolation = "runtime-nonet";
  // More addresses for the sandbox's egress probe to try, "HOST:PORT"
  // ([v6]:port): e.g. the nodes' addresses. The API server's come from
  // the kubeconfig and the cluster.
  std::vector<std::string> egress_probe_targets;
  // The planner pod's egress (policy/planner_egress.h): when set, a
  // NetworkPolicy lets the planner pod reach only these HOST:PORT (IP
  // addresses: the provider's), and the egress probe in the planner pod
  // states whether the cluster enforces it ("planner_egress" in the task
  // record). Empty: no egress policy for the planner, as before.
  std::vector<std::string> planner_egress;
  // Refuse the planner (before it calls the provider) when the probe finds
  // its egress policy not enforced; false: stated, not refused.
  bool planner_egress_required = false;
  // The registry that carries the run's private copy of the seed to the
  // cluster as an image pulled by digest (k8s_seed_image.h): HOST:PORT as the
  // nodes reach it. Empty: the seed goes in a ConfigMap (at most 1 MiB).
  std::string registry;
  bool registry_plain_http = false;   // http:// (a registry on the node's loopback)
  std::string registry_ca_file;       // https: a PEM CA to trust
  // Basic-auth credentials: the CLI uses them, and the pod pulls through an
  // image pull Secret created and deleted with the run's objects.
  std::string registry_username;
  std::string registry_password_file;
  // A seed image older than this is deleted by any `reap`, whoever pushed it
  // (a run on another host, whose process this host cannot ask about).
  std::int64_t registry_ttl_hours = 48;
};

// The planner's context and tool loop (planner_task.h LoopSettings).
struct PlannerConfig {
  std::int64_t context_bytes = 256 * 1024;  // the task's files, in bytes
  bool tools = false;                       // offer the read-only tools (planner_tools.h)
  std::int64_t max_turns = 20;
  std::int64_t tool_result_bytes = 16 * 1024;
  std::int64_t loop_seconds = 300;
  std::string tool_choice = "auto";  // auto | required
  std::int64_t max_reply_tokens = 0;  // 0 = omit
  // Run the baseline (the unpatched seed's tests, cached) before the planner
  // and give the task its failing tests, their output's tail and the files
  // that output names (planner_task.h). Only with the baseline on.
  bool baseline_first = true;
  // The repository map's bound (repo_map.h): paths, sizes, top-level definitions.
  std::int64_t map_bytes = 16 * 1024;
};

// The project's test image (environment.h): built with network before any
// sandbox, from a Containerfile in the seed or from a base image plus set-up
// commands, cached under a key that hashes the base image, the set-up and
// the inputs' contents. Absent (`present` false): images.sandbox as it is.
struct EnvironmentConfig {
  bool present = false;               // an `environment:` section was given
  std::string containerfile;          // relative to the seed; the build context is `inputs`
  std::string base;                   // "" = images.sandbox
  std::vector<std::string> setup;     // one RUN (/bin/sh -c) each, in /lazyagent-env
  std::vector<std::string> inputs;    // seed-relative files or directories (trailing '/')
  std::string network = "bridge";     // the build's network: bridge or none
  // The set-up's egress allow-list (contract/egress_entry.h): when given, the
  // set-up reaches only these, through a proxy on a network with no other
  // way out (engine/podman/egress_proxy.h). Empty: the bridge, unfiltered.
  std::vector<std::string> egress;
  std::int64_t timeout_seconds = 1800;  // the whole build
  // Set once the image exists (resolve_environment): what the result records.
  struct Resolved {
    std::string key;      // 32 hex: sha256 of base image ids, Containerfile text, inputs
    std::string image;    // localhost/lazyagent-env:<key>
    std::string digest;   // the built image's digest (as image_digest: Digest, else Id)
    bool built = false;   // built by this command (false: reused)
    long build_ms = 0;
    // With environment.egress: what the set-up's proxy let through
    // ("HOST:PORT", and "http://..." URLs of plain HTTP requests) and what it
    // refused ("HOST:PORT"), in order, and the sha256 of the reached list
    // (kept as an image label, so a reused image still names it).
    std::vector<std::string> egress_reached;
    std::vector<std::string> egress_denied;
    std::string egress_reached_sha256;
    // The egress probe run in the set-up before its first step
    // (policy/setup_egress_probe.h): "enforced", or why not; its attempts.
    std::string egress_probe;
    std::vector<std::string> egress_probe_attempts;  // "NAME OUTCOME"
    std::string id;  // the built image's id: the sha256 of its config
    // On the Kubernetes backend (engine/k8s/k8s_environments.h): the image
    // pushed to k8s.registry, as the sandbox pod pulls it.
    struct Registry {
      std::string image;   // REGISTRY/lazyagent-env@sha256:... (images.sandbox)
      std::string tag;     // REGISTRY/lazyagent-env:<key>
      std::string digest;  // the registry's manifest digest
      bool pushed = false;  // pushed by this command (false: the registry had it)
      long push_ms = 0;
    } registry;
  } resolved;
};

// `mcp:` (the MCP server, cli/mcp_server.h): which seeds a client may name.
struct McpConfig {
  // Directories (absolute once loaded, resolved like `seed`); a client's seed
  // must be one of them or below one. Empty: every seed is refused.
  std::vector<std::string> seeds;
};

// `sessions:` (session.h): how long an agent's session lives. `reap`
// closes one idle longer than idle_ttl_seconds or older than max_age_seconds.
struct SessionsConfig {
  std::int64_t idle_ttl_seconds = 1800;
  std::int64_t max_age_seconds = 86400;
  // The working copy's cap (util/capped_dir.h): bytes and files a session's
  // commands can write in /work, enforced by the filesystem it lives on.
  std::int64_t disk_mib = 2048;
  std::int64_t max_files = 200000;
  // `live`: one long-lived sandbox per session, each command an exec into
  // its persistent shell (cwd, exports and background jobs carry over);
  // `per-command`: a fresh sandbox per command, nothing carries over but the
  // working copy (session.h).
  std::string isolation = "live";
};

// Signed verdicts (docs/signing.md): the Ed25519 private key (PKCS#8 PEM,
// mode 0600) every verdict is signed with; "" = unsigned. Relative to the
// config file's directory. --sign-key overrides it.
struct SigningConfig {
  std::string key;
};

// `eval:` (eval_runner.h): how long an outage of the engine (its service
// stopped or restarting) is waited out before the eval stops, leaving the
// tasks not run as not_run for a resume (eval_outage.h). 0: stop at once.
struct EvalConfig {
  std::int64_t engine_wait_seconds = 600;
};

struct Config {
  std::string source;  // file it came from ("" for built-in defaults)
  std::string seed;    // absolute once loaded (resolved against the file's directory)
  SeedConfig seed_options;  // the rest of `seed:` when it is a mapping
  std::vector<std::string> allow = {"calculator.py"};
  std::string test_command = "python3 -m unittest -v";
  // What decides the verdict (runner_driver.h). "" or `auto`: a JUnit report
  // the tool has the runner write where it recognises the command (pytest,
  // unittest), else the output. `output`: the runner's output only.
  // `junit:PATH`: the test command writes a JUnit XML report at PATH (relative
  // to the project's copy in the sandbox), read instead (junit_report.h).
  std::string report = "auto";
  ImagesConfig images;
  LimitsConfig limits;
  TimeoutsConfig timeouts;
  PatchLimitsConfig patch;
  ProviderConfig provider;
  EngineConfig engine;
  UserNamespaceConfig user_namespace;
  RepairConfig repair;
  K8sConfig k8s;
  PlannerConfig planner;
  EnvironmentConfig environment;
  McpConfig mcp;
  SessionsConfig sessions;
  SigningConfig signing;
  EvalConfig eval;
};

// Parse YAML text. `source` names the file in error messages; `base_dir`
// resolves a relative `seed`. Errors are kUsage and name the key path.
Result<Config> parse_config(const std::string& yaml_text, const std::string& source,
                            const std::string& base_dir);

// Read and parse a file.
Result<Config> load_config_file(const std::string& path);

// The config the CLI uses when --config is absent: $LAZYAGENT_CONFIG, else
// ./config/lazyagent.yaml, else the installed share/lazyagent-oci/config/lazyagent.yaml,
// else built-in defaults. Returns the path chosen ("" for defaults).
std::string default_config_path();

}  // namespace lazyagent
