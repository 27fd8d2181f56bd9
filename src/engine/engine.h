// The engine seam: what differs between running a sandbox (or a planner) on
// podman and on Kubernetes, and nothing else (STYLE.md principle 15).
//
// The pipeline (sandbox_run.h: one sandbox run; triage_run.h: baseline,
// re-runs, infra retry, triage; planner_run.h and agent_run.h: the planner
// and the repair loop) is written once against this interface:
//
//   Engine::check          reachable, supported; leftovers of dead runs reaped
//   Engine::image_digest   the sandbox image's digest, when known before a run
//   Engine::prepare_sandbox  the private copy of seed + change (a directory
//                          podman bind-mounts; a ConfigMap for Kubernetes),
//                          returned as the run's Sandbox, which owns it
//   Sandbox::create        the sandbox, not yet running
//   Sandbox::verify        what the engine really made, checked against the
//                          policy before anything runs (podman: inspect + the
//                          generated OCI spec; Kubernetes: the stored Job)
//   Sandbox::start, wait   run it; wait kills it at the deadline
//   Sandbox::logs          bounded output
//   Sandbox::remove        delete everything of the run and confirm it is gone;
//                          the destructor does the same on every other path
//   Engine::prepare_planner  the planner with its task (planner_run.h)
//   Engine::reap           remove what runs whose owner died left behind
//   Engine::after_outage   the engine answers again after an outage; what
//                          its runs left when it went away removed
//   Engine::warm_pool      optional: warm spares (warm_pool.h)
//   Engine::environments   optional: project test images (environments.h)
//
// Engines are used from one thread at a time (eval gives each worker its own).
// A recording fake (tests/unit/fake_engine.h) drives the pipeline's logic in
// unit tests; the real engines are tested against podman and a real cluster.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "policy/isolation_probe.h"
#include "contract/patch_contract.h"
#include "contract/planner_task.h"
#include "util/result.h"
#include "store/store_sweep.h"
#include "util/progress.h"
#include "policy/sandbox_policy.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

// One sandbox run's inputs. The seed and patch outlive the Sandbox.
struct SandboxSpec {
  std::string run_id;
  const Config* config = nullptr;  // effective config (test_command, ...)
  SandboxPolicy policy;            // after Engine::adapt_policy
  const SeedSnapshot* seed = nullptr;
  // The private copy's differences from the seed (change_set.h copy_writes:
  // the resolved change, whatever form the patch came in); empty for the
  // baseline (the seed as it is).
  const std::vector<FileWrite>* writes = nullptr;
  // A session's command (session.h): the host path of its working copy,
  // which the sandbox gets read-write at /work instead of a copy of `seed`
  // (seed and writes unused; the copy outlives the sandbox). Engines that
  // cannot mount it refuse.
  std::string session_copy;
  ProgressFn progress;             // notes from the engine ("podman warning: ...")
  // For warm spares (engine.warm): the image's digest and the command the
  // sandbox runs for a report nonce (config->test_command is it for the
  // run's own nonce). A claimed spare brings its own (Sandbox::report_nonce).
  std::string image_digest;
  std::function<std::string(const std::string& nonce)> command_for;
  // When set, the output's lines as they arrive during wait() (from another
  // thread; the probe's block included: the caller filters). Engines that
  // cannot follow a log leave it uncalled.
  std::function<void(const std::string&)> output;
};

// One planner run's inputs.
struct PlannerSpec {
  std::string run_id;
  const Config* config = nullptr;
  const PlannerTask* task = nullptr;
  const SeedSnapshot* seed = nullptr;
};

// A claimed warm spare, as the run's record shows it.
struct SpareClaim {
  std::string report_nonce;  // the spare's own (the run's evidence uses it)
  nlohmann::json warm;       // {"spare": ..., "key": ...}
};

struct ContainerExit {
  int exit_code = -1;
  bool timed_out = false;     // killed at the deadline
  std::string image_digest;   // when only the run tells (Kubernetes: the pod's imageID)
};

struct ContainerLogs {
  std::string combined;       // stdout and stderr as they came
  std::string out, err;       // separately, where the engine can tell (the planner's patch is on stdout)
  bool truncated = false;     // the read cap cut it
  std::string cut_where;      // for the cut marker: "at 1052672 bytes", "by the pod log limit"
};

// One sandbox or planner of one run, and everything the engine made for it.
// Destroying it removes whatever remove() would, ignoring errors.
class Container {
 public:
  virtual ~Container() = default;
  virtual std::string id() const = 0;  // "" until created
  virtual Status create() = 0;
  virtual Status verify() = 0;
  virtual Status start() = 0;
  // Until it exits, or deadline_ms passes (then it is killed: timed_out), or
  // a signal arrives (kInterrupted).
  virtual Result<ContainerExit> wait(long deadline_ms) = 0;
  virtual Result<ContainerLogs> logs(std::size_t max_bytes) = 0;
  // Idempotent; confirms the objects are gone. Not interruptible.
  virtual Status remove() = 0;
  // Engine-specific facts for the record (Kubernetes: object names).
  virtual nlohmann::json describe() const { return nlohmann::json::object(); }
  // A claimed warm spare (warm_pool.h): its report nonce and what it was;
  // null for a sandbox made for the run.
  virtual const SpareClaim* spare() const { return nullptr; }
  // remove() handed the container to WarmPool::finish_removals (defer_removals).
  virtual bool removal_deferred() const { return false; }
};

class Sandbox : public Container {
 public:
  // What the isolation probe shows that this sandbox must not have, judged
  // for this engine's runtime; `notes` gets what could not be observed.
  // (It may keep what it saw for policy_json.)
  virtual std::vector<std::string> probe_violations(const ProbeReport& probe, bool timed_out,
                                                    std::vector<std::string>* notes) = 0;
  // The result's `policy` once the run is over: `base` (Engine::policy_json)
  // with what only the run can tell.
  virtual nlohmann::json policy_json(const nlohmann::json& base) const { return base; }
  // What the sandbox used, once it has exited (the result's `resources`:
  // cpu_ms, memory_peak_bytes, pids_peak, tmpfs_peak_bytes, or
  // {"available": false, "reason": ...}); read before remove().
  virtual nlohmann::json resources() const {
    return {{"available", false}, {"reason", "this engine does not measure resources"}};
  }
};

// One command of a live session (pipeline/session.h), run by
// LiveSandbox::exec in the session's persistent shell (live_shell.h).
struct LiveCommand {
  std::int64_t number = 0;   // the session's command count: 1, 2, ...
  std::string command;       // one shell line (or several)
  long deadline_ms = 120000; // then its processes are ended (timed_out)
  std::size_t head_bytes = 0, tail_bytes = 0;  // the output kept (limits.log_bytes)
  // When set, the output's lines as they arrive (this thread).
  std::function<void(const std::string&)> output;
  // When set, made true once the command has been handed to the sandbox: an
  // error before that (the engine unreachable) means it did not run.
  bool* started = nullptr;
};

struct LiveExit {
  int exit_code = -1;        // the command's (-1: not known)
  bool timed_out = false;    // its processes were ended at the deadline
  bool shell_ended = false;  // the shell ended with it (exit, exec, killed): the next command gets a fresh one
  bool fresh_shell = false;  // this command started a new shell (the first, or after one ended)
  std::string shell;         // "bash" or "sh"
  std::string output;        // as the command printed it, head and tail kept
  bool truncated = false;
};

// A session's long-lived sandbox: made and verified once (Engine::open_live),
// then reached by id from any process (Engine::live). It ends itself at its
// deadline even if no process of ours is left (its first process is bound
// to it, and the engine removes it then).
class LiveSandbox {
 public:
  virtual ~LiveSandbox() = default;
  virtual std::string id() const = 0;
  // One command in the session's shell; an error when it could not be run
  // or read (the sandbox has ended: kEngine, saying so).
  virtual Result<LiveExit> exec(const LiveCommand& c) = 0;
  // Ends command `number` if it still runs (its caller died mid-command).
  virtual Status end_command(std::int64_t number) = 0;
  // Nothing in the sandbox runs between freeze and thaw (the cgroup freezer).
  virtual Status freeze() = 0;
  virtual Status thaw() = 0;
  // Idempotent; confirms it is gone.
  virtual Status remove() = 0;
};

// A sandbox whose removal waits for WarmPool::finish_removals.
struct DeferredRemoval {
  std::string id;   // the container
  std::string dir;  // its private copy ("" = none)
  std::string cgroup_parent;  // its run's cgroup (cgroup_usage.h; "" = none)
};

// Where an engine runs its sandboxes, beyond what the config says.
struct EnginePlacement {
  // Part of eval's resume key, under the engine's name (Kubernetes:
  // namespace and runtime_class); null = nothing beyond the config.
  nlohmann::json settings;
  std::string where;           // for eval's progress line ("" = nothing to say)
  bool prepare_ahead = true;   // extra threads preparing sandboxes help (not where a cluster schedules)
  // Sandboxes run on this machine and can bind-mount a host directory (a
  // session's working copy, SandboxSpec::session_copy).
  bool on_this_host = false;
};

// The provider's settings as `configure` read them from the environment.
struct ProviderValues {
  std::string base_url, model, api_key;
};

// What `configure` stored, for the user: never a value.
struct ProviderStored {
  nlohmann::json json;             // what --json prints
  std::vector<std::string> lines;  // what it prints otherwise
  std::string note;                // a warning for stderr ("" = none)
};

class WarmPool;
class Environments;

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const char* name() const = 0;  // "podman", "k8s"

  // A demanded limit the runtime cannot enforce refuses the run (runtime_policy.h).
  virtual Status check_policy(const Config& config) const = 0;
  // The policy as this engine runs it (Kubernetes: a non-root uid, no id map).
  virtual void adapt_policy(SandboxPolicy* policy) const = 0;
  // The result's `policy` before any sandbox exists.
  virtual nlohmann::json policy_json(const SandboxPolicy& policy, const Config& config) const = 0;

  virtual Status check(const ProgressFn& progress) = 0;
  virtual Result<std::string> image_digest(const std::string& image) = 0;  // "" = known after the run
  virtual Result<std::unique_ptr<Sandbox>> prepare_sandbox(const SandboxSpec& spec) = 0;

  // The provider settings the planner needs exist (podman secrets, a Secret).
  virtual Status check_planner(const Config& config) = 0;
  // `configure`: the settings stored where this engine's planner reads them
  // (podman: the config's three secrets; Kubernetes: one Secret), replacing
  // what is there; a base URL the planner could not use is refused. No value
  // appears in the result or in an error.
  virtual Result<ProviderStored> store_provider(const Config& config, const ProviderValues& values) = 0;
  virtual Result<std::string> planner_image_digest(const Config& config) = 0;
  virtual Result<std::unique_ptr<Container>> prepare_planner(const PlannerSpec& spec) = 0;

  // What runs whose owner died left behind, removed; then the run store's
  // sweep (store_sweep.h), on every engine.
  virtual Result<ReapReport> reap(bool all) = 0;

  // After an outage (an error of kind kUnreachable: the service stopped,
  // restarted or is not there): ok once the engine answers again, and then
  // what this engine's runs could not remove while it was away (a sandbox
  // that outlived a restart of the service) is removed first; the outage's
  // error (kUnreachable) while it does not answer. Another error: it answers,
  // but a leftover could not be removed (`reap` removes it later). Cheap: eval
  // calls it with a backoff while it waits (eval_outage.h).
  virtual Status after_outage() { return ok_status(); }
  // Removes what the run `run_id` left, whoever made it (a session's command
  // an outage cut short, whose owner may still be alive); nothing is fine.
  virtual Status remove_run(const std::string& run_id) {
    (void)run_id;
    return ok_status();
  }

  // Whether the sandbox `id` (a run record's sandbox_id, made by this
  // engine) still exists; an error when the engine cannot be asked.
  virtual Result<bool> sandbox_exists(const std::string& id) = 0;
  // What this process (pid) made and has not removed (an interrupted run's
  // leftovers, named for the user); the CLI checks after an interruption.
  virtual Result<std::vector<std::string>> left_by_process(int pid) = 0;
  // Where the sandboxes run beyond what the config says (eval's resume key,
  // its progress line, how many sandboxes it prepares ahead).
  virtual EnginePlacement placement() const { return {}; }

  // A live session's sandbox (session.h): `spec.session_copy` at /work, the
  // policy verified after create and the isolation probe judged before it is
  // returned, running until close or `lifetime_seconds` (then it ends and is
  // removed by itself). Labelled for the reaper as the session `spec.run_id`'s.
  virtual Result<std::unique_ptr<LiveSandbox>> open_live(const SandboxSpec& spec, std::int64_t lifetime_seconds) {
    (void)spec;
    (void)lifetime_seconds;
    return usage_error(std::string("live sessions: the ") + name() + " engine cannot keep a sandbox between commands");
  }
  // The live sandbox `id` (open_live's), for a later process; no call is made.
  virtual std::unique_ptr<LiveSandbox> live(const std::string& id) {
    (void)id;
    return nullptr;
  }

  // Optional parts: null (or the error saying why) where the engine has none.
  // Warm spares (warm_pool.h): podman only.
  virtual WarmPool* warm_pool() { return nullptr; }
  // Project test images (environments.h); the error says what to do instead.
  virtual Result<Environments*> environments() {
    return usage_error(std::string("environment: the ") + name() + " engine cannot build an environment");
  }
};

}  // namespace lazyagent
