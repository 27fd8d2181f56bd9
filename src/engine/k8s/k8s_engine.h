// The Kubernetes engine (engine.h): sandboxes and planners as Jobs on a
// cluster, built from the same k8s_documents() as `export k8s`.
//
//   check     namespace name, API version, the namespace exists; Jobs,
//             pods, ConfigMaps and NetworkPolicies of dead runs reaped
//             (label io.lazyagent.run + owner labels)
//   copy      the documents for this run: ConfigMap <run>-seed (seed +
//             change), the deny-all NetworkPolicy, Job <run>-sandbox with the
//             owner labels and k8s.runtime_class (adapt_documents)
//   create    the ConfigMap, the NetworkPolicy and the Job, paused
//             (parallelism 0: no pod yet)
//   verify    the Job and NetworkPolicy as the API server stored them (after
//             defaulting and any admission webhook), against what was sent
//             (k8s_stored_violations): any difference refuses the run
//   start     the Job unpaused (parallelism 1): its pod is created
//   wait      watch the Job's pod to termination, with the deadline plus
//             the scheduling slack; a pod the Job's activeDeadlineSeconds
//             killed is a timeout; exit code and imageID from its status
//   logs      the pod's log, bounded
//   remove    everything labelled with the run and role, confirmed gone
// The planner: ConfigMap <run>-task (its task.json) and Job <run>-planner
// mounting the provider Secret (by name, as files; its values are never read
// except base_url's scheme), created at start; its log carries the patch (the
// one line starting with '{') and the planner's own lines.
// Every object carries io.lazyagent.run=<run id> plus owner labels and is
// deleted on every path (the Container's destructor; SIGINT ends a watch,
// the deletes are not interruptible). `reap --backend k8s` removes what a
// killed run left.
//
// Network isolation does not rest on NetworkPolicy: the sandbox pod asks for
// the RuntimeClass of k8s.runtime_class (scripts/k8s-cluster.sh installs
// `lazyagent-nonet`: gVisor runsc with --network=none under the runc shim,
// so the pod has only its own loopback whatever the CNI does), and the probe
// inside the pod proves it for every run. The pod runs as a non-root uid
// (export_k8s.h), not in podman's id mapping.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "engine/engine.h"
#include "engine/environments.h"
#include "export/export_k8s.h"
#include "export/export_k8s_configmap.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/k8s_seed_image.h"
#include "engine/k8s/oci_registry.h"
#include "store/run_store.h"

namespace lazyagent {

struct K8sRunSettings {
  std::string ns = "default";
  std::string secret = "lazyagent-provider";
  std::string runtime_class = "lazyagent-nonet";  // "" = the cluster's default runtime
  std::string plain_http_provider_ip;             // opt-in, see Config::k8s
  long startup_slack_seconds = 120;               // scheduling + container start, on top of the timeouts
  std::int64_t ttl_seconds_after_finished = 3600;  // the Jobs' ttlSecondsAfterFinished
  std::string isolation = "runtime-nonet";         // Config::k8s.isolation
  std::vector<std::string> egress_probe_targets;   // Config::k8s, HOST:PORT
  std::vector<std::string> planner_egress;         // Config::k8s: the planner pod's allowed ADDR:PORT
  bool planner_egress_required = false;
  // Config::k8s.registry*: the seed image's registry ("" = the ConfigMap).
  std::string registry;
  bool registry_plain_http = false;
  std::int64_t registry_ttl_seconds = 48 * 3600;  // k8s.registry_ttl_hours
  std::string registry_ca_file, registry_username, registry_password_file;
};

// The planner pod's egress (policy/planner_egress.h), when
// s.planner_egress is set: the NetworkPolicy <run>-planner-egress (planner
// labels, egress only to those addresses; "" name when not set: returned
// null), the egress-probe init container (the sandbox Job's image) with
// `probe_targets` ("label=ADDR:PORT ..."), and the planner's --egress-*
// arguments. Adds to `d.planner_job`.
nlohmann::ordered_json add_planner_egress(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id,
                                          const std::string& probe_targets);

// The egress probe's targets for the sandbox pod (egress_probe.h), as
// "label=ADDR:PORT" with IP addresses only (names resolved here, on the
// host; loopback dropped: in the pod it is the pod's own): the API server
// of the kubeconfig ("api"), the `kubernetes` Service ("api-service",
// "HOST:PORT" or ""), the config's ("config").
std::vector<std::string> k8s_egress_targets(const std::string& server_url, const std::string& api_service,
                                            const std::vector<std::string>& extra);

K8sRunSettings k8s_settings_from_config(const Config& config);

// Kubernetes label values allow [A-Za-z0-9._-] only: the owner labels of
// ownership.h in that alphabet ("0@host" -> "0.host"), and back.
std::map<std::string, std::string> k8s_owner_labels(const std::string& role, const std::string& run_id);
std::map<std::string, std::string> owner_labels_from_k8s(const nlohmann::json& labels);

// Pure: the export's documents made ready for this run: the owner labels on
// every object and pod template, the provider Secret's name, the sandbox's
// RuntimeClass, and for the planner a hostAlias host.containers.internal ->
// plain_http_provider_ip when that opt-in is set.
void adapt_documents(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id);

// Splits a planner pod's log (stdout and stderr by line) into the patch
// (the last line starting with '{') and the planner's own lines.
void split_planner_log(const std::string& log, std::string* patch, std::string* planner_lines);

// What a pod's status says about its one container.
struct PodEnd {
  bool terminated = false;
  int exit_code = -1;
  std::string reason;        // "Completed", "Error", "OOMKilled", ...
  std::string stuck;         // a waiting reason that will not resolve (ErrImageNeverPull, ...)
  std::string image_id;      // the container's imageID, once it ran
  std::string evicted;       // the kubelet evicted the pod (its message): killed from outside, no verdict
};
PodEnd pod_end(const nlohmann::json& pod);

// Pure: how the objects the API server stored differ from what was sent.
// Every field sent must be there unchanged (arrays element by element, so an
// added container or volume counts); none of hostNetwork, hostPID, hostIPC,
// shareProcessNamespace, initContainers, ephemeralContainers, envFrom may
// have been added. One sentence per difference, with its JSON path.
std::vector<std::string> k8s_stored_violations(const nlohmann::json& sent, const nlohmann::json& stored);

// The label selector of every object of one run (io.lazyagent.run=<run id>).
std::string k8s_run_selector(const std::string& run_id);

// One Job of one run with the objects it needs (ConfigMaps, NetworkPolicies:
// created after the Job, owned by it), as a Container (k8s_job.cpp).
// `paused`: the Job is created with parallelism 0, verified, then started
// (the sandbox); otherwise it is created at start (the planner).
using K8sObjects = std::vector<std::pair<const K8sKind*, nlohmann::ordered_json>>;
// What a Job brings besides its objects (the seed image, k8s_seed_image.h):
// a check right before its pod starts (after the stored Job was verified),
// a removal that runs once with the run's objects on every path, and what
// the result's policy.k8s.seed says.
struct K8sJobExtras {
  std::function<Status()> before_start;
  std::function<Status()> on_remove;
  nlohmann::json seed;  // null: the ConfigMap
};
// A seed image pushed for one Job (k8s_seed_transport.cpp): the image and the
// extras that verify it by digest before the pod starts and delete it with
// the run's objects.
struct K8sPushedSeed {
  SeedImage image;
  K8sJobExtras extras;
};

std::unique_ptr<Sandbox> make_k8s_job(K8sClient& k8s, const K8sRunSettings& s, const std::string& run_id,
                                      const char* role, K8sObjects objects, nlohmann::ordered_json job, bool paused,
                                      const SandboxPolicy& policy, const K8sDocuments& d, K8sJobExtras extras = {});

// Jobs, pods, ConfigMaps and NetworkPolicies carrying io.lazyagent.run in
// `ns` whose owner is gone (all: every one); a run's image pull Secret goes
// with its Job (owner reference).
Result<ReapReport> reap_k8s(K8sClient& k8s, const std::string& ns, bool all);

class K8sEngine : public Engine {
 public:
  // `store`: the run store whose records of dead runs reap() closes as
  // interrupted (store_sweep.h), as the podman engine's does; none, none closed.
  K8sEngine(std::unique_ptr<K8sClient> client, K8sRunSettings settings, std::optional<RunStore> store = std::nullopt);

  const char* name() const override { return "k8s"; }
  Status check_policy(const Config&) const override { return ok_status(); }
  void adapt_policy(SandboxPolicy* policy) const override;
  nlohmann::json policy_json(const SandboxPolicy& policy, const Config& config) const override;

  Status check(const ProgressFn& progress) override;
  Result<std::string> image_digest(const std::string&) override { return std::string(); }
  Result<std::unique_ptr<Sandbox>> prepare_sandbox(const SandboxSpec& spec) override;

  Status check_planner(const Config& config) override;
  // k8s_provider_secret.cpp
  Result<ProviderStored> store_provider(const Config& config, const ProviderValues& values) override;
  Result<std::string> planner_image_digest(const Config&) override { return std::string(); }
  Result<std::unique_ptr<Container>> prepare_planner(const PlannerSpec& spec) override;

  Result<ReapReport> reap(bool all) override;
  // The API server answers its version again (an outage's error, kUnreachable,
  // while it does not). What a cut-short run left is not chased here: its
  // Job ends at its activeDeadlineSeconds and `reap` removes it once the run's
  // owner is gone.
  Status after_outage() override;
  // A record's sandbox_id is "namespace/pod".
  Result<bool> sandbox_exists(const std::string& id) override;
  // Jobs, ConfigMaps and NetworkPolicies labelled with this host's owner and `pid`.
  Result<std::vector<std::string>> left_by_process(int pid) override;
  EnginePlacement placement() const override;
  // k8s_environments.h: built by the builder's engine (the local podman
  // service), pushed to k8s.registry; none without k8s.registry.
  Result<Environments*> environments() override;
  void set_environment_builder(std::function<std::unique_ptr<Engine>()> builder) {
    environment_builder_ = std::move(builder);
  }

 private:
  // `seed_image`: the sandbox's private copy; `planner_snapshot`: the
  // planner's tools' snapshot (null: none, the ConfigMap / the one-shot prompt).
  Result<K8sDocuments> documents(const Config& config, const SandboxPolicy& policy, const SeedSnapshot& seed,
                                 const std::vector<FileWrite>* writes, const PlannerTask* task,
                                 const std::string& run_id, const SeedImage* seed_image = nullptr,
                                 const SeedImage* planner_snapshot = nullptr) const;
  // The seed image's registry (k8s.registry), made on first use.
  Result<RegistryClient*> registry();
  // `files` as a seed image for `role`'s Job, tagged `tag` (k8s_seed_transport.cpp).
  Result<K8sPushedSeed> push_seed(std::vector<K8sFile> files, const std::vector<std::string>& empty_dirs,
                                  const char* role, const std::string& run_id, const std::string& tag);
  // The registry's image pull Secret for `role`'s Job, when it has credentials.
  void add_pull_secret(K8sObjects& objects, nlohmann::ordered_json& job, const char* role, const std::string& run_id);
  // The sandbox's private copy pushed as a seed image; its objects and extras.
  Result<std::unique_ptr<Sandbox>> prepare_sandbox_from_registry(const SandboxSpec& spec, SandboxPolicy policy);
  // The planner's snapshot (planner_snapshot.h) as a seed image for the tool
  // loop, or, without k8s.registry, none and why (k8s_planner_snapshot.cpp).
  Result<std::optional<K8sPushedSeed>> planner_snapshot_image(const PlannerSpec& spec, nlohmann::json* why_none);

  std::unique_ptr<K8sClient> k8s_;
  K8sRunSettings s_;
  std::string server_version_;
  std::optional<RunStore> store_;
  bool plain_http_ = false;  // the provider Secret's base_url is plain http (opted in)
  const std::vector<std::string>& egress_targets();
  std::optional<std::vector<std::string>> egress_targets_;
  std::shared_ptr<RegistryClient> registry_;
  std::function<std::unique_ptr<Engine>()> environment_builder_;
  std::unique_ptr<Environments> environments_;
};

}  // namespace lazyagent
