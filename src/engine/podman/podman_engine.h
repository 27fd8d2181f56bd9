// The podman engine (engine.h): sandboxes and planners as containers of a
// podman service, through its REST API (podman_client.h).
//
//   check     ping, API version, the sandbox service's runtime
//             (runtime_engine.h); containers and private copies of dead
//             runs reaped (podman_reaper.h)
//   copy      seed + patch written to work/<run>/seed under the run store
//             (mode 0700), owned by the user namespace's root (rootless:
//             readable by it, rootless_host.h), plus the
//             seccomp profile podman reads at create
//   create    POST containers/create with the policy's request (sandbox_policy.h)
//   verify    init, then inspect + the OCI spec podman generated, checked by
//             the policy verifier (policy_verifier.h): any difference refuses
//   wait      podman's wait with a host-side deadline, SIGKILL at it
//   logs      demultiplexed (log_stream.h), at most the cap
//   remove    DELETE, busy retries, confirmed gone; the private copy deleted
// The planner runs on the runc service (it needs a network, and gVisor's
// service has none); sandboxes on the service of the config's runtime.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "engine/podman/environment.h"
#include "engine/podman/podman_client.h"
#include "engine/podman/rootless_host.h"
#include "engine/podman/service_facts.h"
#include "engine/podman/warm_spares.h"
#include "engine/warm_pool.h"
#include "store/run_store.h"

namespace lazyagent {

// A container whose removal met an outage of its service (kUnreachable):
// PodmanEngine::after_outage removes it once the service answers again.
struct StrandedContainer {
  PodmanClient* podman = nullptr;  // the service it is on (the engine's sandbox or planner client)
  std::string id;
  std::string cgroup_parent;       // its run's cgroup (cgroup_usage.h; "" = none)
};

// Its warm pool is itself (warm_spares.h); its environments are built on the
// runc service (environment.h).
class PodmanEngine : public Engine, public WarmPool {
 public:
  // `planner` runs planners (nullptr: `sandbox` does); `runtime` the
  // sandbox's OCI runtime as the user asked for it: "" for whatever the
  // service runs (runc or crun), else "runc", "crun" or "runsc" exactly
  // (runtime_engine.h).
  PodmanEngine(std::unique_ptr<PodmanClient> sandbox, std::unique_ptr<PodmanClient> planner, RunStore store,
               std::string runtime);

  PodmanClient& sandbox_client() { return *sandbox_; }
  PodmanClient& planner_client() { return planner_ ? *planner_ : *sandbox_; }
  const RootlessHost& host() const { return host_; }

  const char* name() const override { return "podman"; }
  Status check_policy(const Config& config) const override;
  // A rootless service: the sandbox's ids in its user's subordinate range,
  // the host's gaps (rootless_host.h) recorded in the policy.
  void adapt_policy(SandboxPolicy* policy) const override;
  nlohmann::json policy_json(const SandboxPolicy& policy, const Config& config) const override;

  Status check(const ProgressFn& progress) override;
  Result<std::string> image_digest(const std::string& image) override;
  Result<std::unique_ptr<Sandbox>> prepare_sandbox(const SandboxSpec& spec) override;

  Status check_planner(const Config& config) override;
  // provider_secrets.cpp
  Result<ProviderStored> store_provider(const Config& config, const ProviderValues& values) override;
  Result<std::string> planner_image_digest(const Config& config) override;
  Result<std::unique_ptr<Container>> prepare_planner(const PlannerSpec& spec) override;

  Result<ReapReport> reap(bool all) override;
  // reap_leftovers (podman_reaper.h) on the sandbox's and the planner's
  // services; `networks` false at a run's start (see there).
  Result<ReapReport> reap_leftovers_of_both(bool all, bool networks);
  // Pings the services, then removes the stranded containers (below).
  Status after_outage() override;
  // Its sandbox and planner, by name (lazyagent-sandbox-<run_id>, ...-planner-).
  Status remove_run(const std::string& run_id) override;
  // A live session's sandbox (live_sandbox.h); its engine files (the
  // seccomp profile) in live/ beside the session's copy.
  Result<std::unique_ptr<LiveSandbox>> open_live(const SandboxSpec& spec, std::int64_t lifetime_seconds) override;
  std::unique_ptr<LiveSandbox> live(const std::string& id) override;
  Result<bool> sandbox_exists(const std::string& id) override;
  Result<std::vector<std::string>> left_by_process(int pid) override;
  EnginePlacement placement() const override {
    EnginePlacement p;
    p.on_this_host = true;
    return p;
  }

  WarmPool* warm_pool() override { return this; }
  Result<Environments*> environments() override { return &environments_; }

  // WarmPool (warm_pool.h)
  Result<std::vector<std::string>> keep_warm(const SandboxSpec& spec, int count) override;
  void defer_removals() override { defer_removals_ = true; }
  Status finish_removals() override;
  void forget_removals() override { deferred_.clear(); }
  Result<std::vector<std::string>> remove_spares() override;
  Result<nlohmann::json> spares_json(std::time_t now) override;

 private:
  // The sandbox service's facts (service_facts.h), asked once per process.
  const Result<ServiceFacts>& facts() const;
  // The runtime the sandboxes run under: check()'s answer, or before it the
  // same choice made from the facts (policy_json() comes first).
  std::string sandbox_runtime() const;
  // Why a sandbox's resources are not read here ("" when they are: a run's
  // own cgroup parent, cgroup_usage.h, which needs root, a runtime with
  // cgroups and the cgroupfs manager, or its systemd scope: scope_slice()).
  std::string unmeasured_reason() const;
  // Under the systemd manager on cgroup v2 (root): the slice whose
  // libpod-<id>.scope is read instead of a cgroup parent; "" otherwise.
  std::string scope_slice() const;
  SpareRecipe recipe_of(const SandboxSpec& spec) const;
  Result<std::unique_ptr<Sandbox>> claim_warm(const SandboxSpec& spec);

  std::unique_ptr<PodmanClient> sandbox_, planner_;
  bool defer_removals_ = false;
  // The start's reaper saw unclaimed spares of this run store (check()).
  bool spares_left_ = false;
  std::vector<DeferredRemoval> deferred_;
  // Sandboxes and planners of this engine whose removal met an outage of
  // their service (kUnreachable): removed by after_outage once it answers.
  std::vector<StrandedContainer> stranded_;
  RunStore store_;
  std::string requested_runtime_;
  std::string runtime_;  // set by check()
  mutable std::optional<Result<ServiceFacts>> facts_;
  RootlessHost host_;  // whose service the sandboxes run on (read once, cheaply)
  PodmanEnvironments environments_;
};

}  // namespace lazyagent
