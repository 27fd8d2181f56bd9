// One Job of one run (the sandbox's or the planner's) with the objects it
// needs, as a Container: created paused, verified against what the API
// server stored, started, waited for, its log read, everything deleted.
#include "engine/k8s/k8s_engine.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "util/base64.h"
#include "policy/isolation_probe.h"
#include "store/ownership.h"
#include "policy/planner_egress.h"
#include "policy/planner_policy.h"
#include "store/store_sweep.h"
#include "policy/sandbox_policy.h"


namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

// The pod's log interleaves, line by line, the planner's stdout (the patch:
// one line of canonical JSON, or a unified diff as it came, many lines) with
// its stderr (cmd_plan.cpp: every line "planner: ..." or, last,
// "planner-summary: {...}"). A JSON line is the patch; else the lines that
// are not the planner's are the diff (the sandbox checks it again).
void split_planner_log(const std::string& log, std::string* patch, std::string* planner_lines) {
  std::istringstream in(log);
  std::string line, json_patch, diff;
  planner_lines->clear();
  while (std::getline(in, line)) {
    if (line.rfind("planner: ", 0) == 0 || line.rfind("planner-summary: ", 0) == 0) {
      *planner_lines += line + "\n";
    } else if (!line.empty() && line[0] == '{') {
      json_patch = line;
    } else {
      diff += line + "\n";
    }
  }
  if (json_patch.empty()) {
    *patch = diff;
  } else {
    *patch = json_patch;
    *planner_lines += diff;  // what else the pod wrote
  }
}

PodEnd pod_end(const json& pod) {
  PodEnd e;
  if (pod.value("/status/reason"_json_pointer, std::string()) == "Evicted") {
    e.terminated = true;
    e.evicted = pod.value("/status/message"_json_pointer, std::string("evicted"));
    if (e.evicted.empty()) e.evicted = "evicted";
    if (e.evicted.size() > 300) e.evicted.resize(300);
    return e;
  }
  // A waiting reason that will not resolve: the pod never starts.
  auto stuck = [&e](const json& state, const std::string& who) {
    if (!state.contains("waiting")) return;
    const std::string r = state["waiting"].value("reason", "");
    static const char* kStuck[] = {"ErrImageNeverPull", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
                                   "CreateContainerConfigError", "CreateContainerError", "RunContainerError"};
    for (const char* s : kStuck) {
      if (r == s) e.stuck = who + r + ": " + state["waiting"].value("message", "");
    }
  };
  // The seed's init container pulls the seed image first: its pull failing
  // (an untrusted registry, a missing image) is as final as the main one's.
  for (const auto& cs : pod.value("/status/initContainerStatuses"_json_pointer, json::array())) {
    stuck(cs.value("state", json::object()), "init container " + cs.value("name", std::string("?")) + ": ");
  }
  const json statuses = pod.value("/status/containerStatuses"_json_pointer, json::array());
  for (const auto& cs : statuses) {
    const json state = cs.value("state", json::object());
    e.image_id = cs.value("imageID", "");
    if (state.contains("terminated")) {
      e.terminated = true;
      e.exit_code = state["terminated"].value("exitCode", -1);
      e.reason = state["terminated"].value("reason", "");
      return e;
    }
    stuck(state, "");
  }
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  if (!e.terminated && (phase == "Failed" || phase == "Succeeded")) {
    e.terminated = true;
    e.reason = pod.value("/status/reason"_json_pointer, phase);
  }
  return e;
}

namespace {

constexpr std::size_t kK8sLogSlack = 4096;  // the pod log's own framing, on top of the pipeline's cap

// Deletes every object of one run and role on every path out of the
// pipeline. The calls are not interruptible: after ^C they still run to the end.
class RunObjects {
 public:
  RunObjects(K8sClient& k, std::string ns, const std::string& run_id, const char* role)
      : k8s_(k), ns_(std::move(ns)), selector_(k8s_run_selector(run_id) + "," + kLabelRole + "=" + role) {}
  ~RunObjects() {
    if (armed_) (void)remove_now();
  }
  RunObjects(const RunObjects&) = delete;
  RunObjects& operator=(const RunObjects&) = delete;
  void arm() { armed_ = true; }
  Status remove_now() {
    if (!armed_) return ok_status();
    armed_ = false;
    std::string errors;
    auto note = [&](const Status& st) {
      if (!st) errors += (errors.empty() ? "" : "; ") + st.error().message;
    };
    note(k8s_.remove_all(kK8sJobs, ns_, selector_));
    note(k8s_.remove_all(kK8sPods, ns_, selector_, 0));
    note(k8s_.remove_all(kK8sConfigMaps, ns_, selector_));
    note(k8s_.remove_all(kK8sNetworkPolicies, ns_, selector_));
    // Confirm: nothing of the run is left (the job controller may still be
    // finishing a pod it created just before the Job went).
    for (int i = 0; i < 50; ++i) {
      std::size_t left = 0;
      for (const K8sKind* kind : {&kK8sJobs, &kK8sPods, &kK8sConfigMaps}) {
        auto l = k8s_.list(*kind, ns_, selector_);
        if (l) left += l->value("items", json::array()).size();
      }
      if (left == 0) break;
      note(k8s_.remove_all(kK8sPods, ns_, selector_, 0));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (!errors.empty()) return engine_error("cleaning up: " + errors);
    return ok_status();
  }

 private:
  K8sClient& k8s_;
  std::string ns_, selector_;
  bool armed_ = false;
};

// One Job of one run (the sandbox's or the planner's) with the objects it
// needs, as a Container.
class K8sJob : public Sandbox {
 public:
  // `paused`: the Job is created with parallelism 0, verified, then started
  // (the sandbox); otherwise it is created at start (the planner).
  K8sJob(K8sClient& k, const K8sRunSettings& s, const std::string& run_id, const char* role,
         std::vector<std::pair<const K8sKind*, ordered_json>> objects, ordered_json job, bool paused,
         K8sJobExtras extras)
      : k8s_(k), s_(s), role_(role), objects_(std::move(objects)), job_(std::move(job)), paused_(paused),
        guard_(k, s.ns, run_id, role), extras_(std::move(extras)) {
    job_name_ = job_["metadata"]["name"].get<std::string>();
    names_[std::string(role) + "_job"] = job_name_;
  }
  ~K8sJob() override { (void)remove(); }

  std::string id() const override { return pod_.empty() ? "" : s_.ns + "/" + pod_; }

  // The Job first, paused (parallelism 0: no pod yet), then its ConfigMaps
  // and NetworkPolicy with an owner reference to it, so that deleting the
  // Job (its TTL after it finished, `kubectl delete job`) deletes them too:
  // collection that does not rest on this process. The pod starts only at
  // start(), once every object exists (and, for the sandbox, was verified).
  Status create() override {
    guard_.arm();
    created_ = true;
    ordered_json paused = job_;
    paused["spec"]["parallelism"] = 0;
    paused["spec"]["completions"] = 1;
    auto c = k8s_.create(kK8sJobs, s_.ns, json(paused));
    if (!c) return c.error();
    const std::string uid = c->value("/metadata/uid"_json_pointer, std::string());
    if (uid.empty()) return engine_error("creating Job " + job_name_ + ": the API server returned no uid");
    const json owner = json::array({{{"apiVersion", "batch/v1"},
                                     {"kind", "Job"},
                                     {"name", job_name_},
                                     {"uid", uid},
                                     {"blockOwnerDeletion", false}}});
    for (const auto& [kind, obj] : objects_) {
      json owned(obj);
      owned["metadata"]["ownerReferences"] = owner;
      if (auto o = k8s_.create(*kind, s_.ns, owned); !o) return o.error();
    }
    return ok_status();
  }

  Status verify() override {
    if (!paused_) return ok_status();
    std::vector<std::string> found;
    auto stored = k8s_.get(kK8sJobs, s_.ns, job_name_);
    if (!stored) return stored.error();
    if (!*stored) return engine_error("verifying the sandbox: Job " + job_name_ + " is gone");
    for (const auto& v : k8s_stored_violations(json(job_["spec"]["template"]),
                                               (**stored).value("/spec/template"_json_pointer, json()))) {
      found.push_back("Job " + job_name_ + ": " + v);
    }
    for (const auto& [kind, obj] : objects_) {
      if (kind != &kK8sNetworkPolicies) continue;
      const std::string name = obj["metadata"]["name"];
      auto np = k8s_.get(*kind, s_.ns, name);
      if (!np) return np.error();
      if (!*np) {
        found.push_back("NetworkPolicy " + name + " is gone");
        continue;
      }
      for (const auto& v : k8s_stored_violations(json(obj["spec"]), (**np).value("spec", json()))) {
        found.push_back("NetworkPolicy " + name + ": " + v);
      }
      for (const char* rules : {"ingress", "egress"}) {
        const json r = (**np)["spec"].value(rules, json::array());
        if (!r.empty()) found.push_back("NetworkPolicy " + name + ": spec." + rules + " has rules");
      }
    }
    if (found.empty()) return check_before_start();
    std::string all;
    for (const auto& f : found) all += (all.empty() ? "" : "; ") + f;
    return engine_error("the sandbox Kubernetes stored does not match the policy, refusing to start it: " + all);
  }

  // A Job started without verify() (the planner) has its seed image checked here.
  Status start() override {
    if (!paused_) {
      if (auto st = check_before_start(); !st) return st.error().context("starting the " + role_);
    }
    auto p = k8s_.merge_patch(kK8sJobs, s_.ns, job_name_, {{"spec", {{"parallelism", 1}}}});
    if (!p) return p.error().context("starting the " + role_);
    return ok_status();
  }

  // Waits for the Job's pod to end (deadline plus the scheduling slack).
  Result<ContainerExit> wait(long deadline_ms) override {
    ContainerExit exit;
    K8sListQuery q;
    q.label_selector = "job-name=" + job_name_;
    std::string stuck;
    auto end = k8s_.watch_until(
        kK8sPods, s_.ns, q,
        [&](const std::string& type, const json& pod) {
          pod_ = pod.value("/metadata/name"_json_pointer, pod_);
          if (type == "DELETED") return true;  // the Job's deadline removed it
          const PodEnd e = pod_end(pod);
          if (!e.stuck.empty()) stuck = e.stuck;
          return e.terminated || !e.stuck.empty();
        },
        deadline_ms + s_.startup_slack_seconds * 1000);
    if (!pod_.empty()) names_[role_ + "_pod"] = pod_;
    if (!end) {
      if (end.error().kind != ErrorKind::kTimeout) return end.error();
      return timed_out(exit);
    }
    if (!stuck.empty()) return engine_error("Job " + job_name_ + ": pod " + pod_ + " cannot start: " + stuck);
    if (end->event_type == "DELETED" || end->object.is_null()) return timed_out(exit);
    const PodEnd e = pod_end(end->object);
    exit.image_digest = e.image_id;
    // An evicted pod was killed by the kubelet mid-run (an emptyDir over its
    // sizeLimit, node pressure): whatever its container's status, it is no verdict.
    if (!e.evicted.empty()) {
      return engine_error("Job " + job_name_ + ": pod " + pod_ + " was evicted by the kubelet (" + e.evicted +
                          "): the run has no verdict; see `kubectl describe pod`");
    }
    // A pod that failed without its container's own termination record was
    // killed from outside: the Job's activeDeadlineSeconds (the deadline).
    if (e.reason == "DeadlineExceeded" || (e.terminated && e.exit_code < 0)) return timed_out(exit);
    exit.exit_code = e.exit_code;
    end_ = e;
    end_message_ = end->object.value("/status/containerStatuses/0/state/terminated/message"_json_pointer, std::string());
    return exit;
  }

  Result<ContainerLogs> logs(std::size_t max_bytes) override {
    ContainerLogs l;
    if (timed_out_ || pod_.empty()) return l;  // a pod killed at its deadline may have left nothing to read
    const std::size_t cap = max_bytes + kK8sLogSlack;
    auto log = k8s_.pod_log(s_.ns, pod_, role_, cap);
    if (!log) {
      return log.error().context("the container ended (exit " + std::to_string(end_.exit_code) + ", " + end_.reason +
                                 (end_message_.empty() ? "" : ": " + end_message_) + ") but its log cannot be read");
    }
    l.combined = log->body;
    l.truncated = log->truncated || log->body.size() >= cap;
    l.cut_where = "by the pod log limit";
    if (role_ == "planner") split_planner_log(l.combined, &l.out, &l.err);
    return l;
  }

  // The run's objects, then (once) what lives outside the cluster: the seed image.
  Status remove() override {
    Status st = guard_.remove_now();
    // A Secret (the image pull Secret) by name: listing Secrets is a right
    // the CLI does not ask for (docs/k8s-rbac.yaml); its owner reference to
    // the Job collects it too.
    for (const auto& [kind, obj] : objects_) {
      if (kind != &kK8sSecrets || !created_) continue;
      Status r = k8s_.remove(*kind, s_.ns, obj["metadata"]["name"].get<std::string>());
      if (st && !r) st = r.error().context("cleaning up");
    }
    created_ = false;
    if (extras_.on_remove) {
      Status r = extras_.on_remove();
      extras_.on_remove = nullptr;
      if (st && !r) st = r.error().context("cleaning up");
    }
    return st;
  }

  // The planner's: its snapshot too (the tool loop's, or why there is none).
  nlohmann::json describe() const override {
    json d = names_;
    if (role_ == "planner" && !extras_.seed.is_null()) d["snapshot"] = extras_.seed;
    return d;
  }

  // How the probe is judged: the local cluster's RuntimeClass is gVisor
  // (scripts/runsc-nonet.py); any other pod is judged strictly, as runc.
  std::vector<std::string> probe_violations(const ProbeReport& probe, bool timed_out,
                                            std::vector<std::string>* notes) override {
    probe_ifaces_ = probe.interfaces;
    // A pod killed at its deadline may have left no log to judge: a timeout verdict.
    if (timed_out && !probe.found) return {};
    const std::string runtime = s_.runtime_class == "lazyagent-nonet" ? "runsc" : "runc";
    // runtime-nonet: only lo, as on podman; the other modes give the pod an
    // eth0 by design, and the egress probe decides (and must have run).
    const bool egress_rule = s_.isolation != "runtime-nonet";
    auto violations = lazyagent::probe_violations(probe, policy_, runtime, egress_rule);
    const bool reached = std::any_of(probe.egress.attempts.begin(), probe.egress.attempts.end(),
                                     [](const EgressAttempt& a) { return a.reached(); });
    if (egress_rule && reached) {
      violations.push_back(
          s_.isolation == "networkpolicy"
              ? "k8s.isolation networkpolicy: the sandbox pod reached the addresses above, so this cluster does not "
                "enforce the deny-all NetworkPolicy (its CNI ignores NetworkPolicy, e.g. the bridge plugin); run on a "
                "cluster whose CNI enforces it (Calico, Cilium, GKE Dataplane V2, ...) or set k8s.isolation to "
                "runtime-nonet or runtimeclass with a RuntimeClass that has no network"
              : "k8s.isolation runtimeclass: the sandbox pod under RuntimeClass " + s_.runtime_class +
                    " reached the addresses above, so neither the RuntimeClass nor the cluster's CNI (the deny-all "
                    "NetworkPolicy) blocks its egress; use a CNI that enforces NetworkPolicy or a RuntimeClass "
                    "with no network");
    }
    // gVisor's /proc/self/status has no NoNewPrivs line at all (runc's says 0
    // or 1): under the no-network RuntimeClass an absent line cannot be
    // judged and is reported as not observable; a "0" is still a violation.
    // (Measured: prctl(PR_GET_NO_NEW_PRIVS) inside the gVisor pod returns 1.)
    if (!s_.runtime_class.empty() && probe.found && probe.no_new_privs.empty()) {
      violations.erase(std::remove(violations.begin(), violations.end(), std::string("no_new_privs is not set")),
                       violations.end());
      nnp_unobservable_ = true;
      if (notes) notes->push_back(kNnpNote);
    }
    return violations;
  }

  // The Kubernetes API has no per-pod CPU or memory figures of its own:
  // they come from metrics-server (metrics.k8s.io), sampled every ~15 s and
  // gone with the pod; this tool does not query it. Never a made-up figure.
  json resources() const override {
    return {{"available", false},
            {"reason", "Kubernetes: the API offers no per-pod usage without metrics-server (metrics.k8s.io, "
                       "sampled every ~15 s), which this tool does not query"}};
  }

  json policy_json(const json& base) const override {
    json p = base;
    json& k = p["k8s"];
    k["objects"] = names_;
    if (role_ == "sandbox") k["seed"] = extras_.seed.is_null() ? json{{"transport", "configmap"}} : extras_.seed;
    const json uid = job_.value("/spec/template/spec/securityContext/runAsUser"_json_pointer, json());
    p["user"]["uid"] = uid;
    k["probe_interfaces"] = probe_ifaces_;
    k["egress_probe_targets"] = policy_.egress_probe_targets;
    if (nnp_unobservable_) k["probe_notes"] = json::array({kNnpNote});
    k["enforced"] = enforced_;
    k["not_enforced"] = json::array();
    for (const auto& line : not_enforced_) {
      // The export's network caveat is about NetworkPolicy alone; the RuntimeClass answers it.
      // In the egress modes a run that gets here had a probe that reached nothing.
      if ((!s_.runtime_class.empty() || s_.isolation != "runtime-nonet") && line.rfind("network: ", 0) == 0) continue;
      k["not_enforced"].push_back(line);
    }
    if (s_.isolation != "runtime-nonet") {
      k["enforced"].push_back("network: " + k.value("network", std::string()) +
                              " (the egress probe in this pod reached none of its targets)");
    } else if (!s_.runtime_class.empty()) {
      k["enforced"].push_back("network: " + k.value("network", std::string()));
    }
    if (!s_.runtime_class.empty()) {
      k["not_enforced"].push_back("memory/cpu limits under gVisor: runsc is given the pod's cgroup; not verified by a "
                                  "test here (podman's runsc path measured them as not enforced with --ignore-cgroups)");
    }
    return p;
  }

  void set_policy(const SandboxPolicy& policy, const K8sDocuments& d) {
    policy_ = policy;
    enforced_ = d.enforced;
    not_enforced_ = d.not_enforced;
    for (const auto& [kind, obj] : objects_) {
      const std::string name = obj["metadata"]["name"];
      names_[kind == &kK8sNetworkPolicies ? "network_policy"
             : kind == &kK8sSecrets       ? "pull_secret"
             : role_ == "planner"         ? "task_configmap"
                                          : "seed_configmap"] = name;
    }
  }

 private:
  static constexpr const char* kNnpNote =
      "no_new_privs not observable in the pod: gVisor's /proc/self/status has no NoNewPrivs line "
      "(allowPrivilegeEscalation: false is in the spec)";

  // The extras' check (the seed image by digest), timed into the seed's record.
  Status check_before_start() {
    if (!extras_.before_start) return ok_status();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = extras_.before_start();
    extras_.seed["verify_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }

  Result<ContainerExit> timed_out(ContainerExit exit) {
    timed_out_ = true;
    exit.timed_out = true;
    exit.exit_code = 137;
    return exit;
  }

  K8sClient& k8s_;
  const K8sRunSettings& s_;
  std::string role_;
  std::vector<std::pair<const K8sKind*, ordered_json>> objects_;
  ordered_json job_;
  bool paused_;
  RunObjects guard_;  // deletes what was created (remove(), the destructor)
  K8sJobExtras extras_;
  bool created_ = false;
  std::string job_name_, pod_;
  json names_ = json::object();
  PodEnd end_;
  std::string end_message_;
  bool timed_out_ = false;
  SandboxPolicy policy_;
  std::vector<std::string> enforced_, not_enforced_;
  std::vector<std::string> probe_ifaces_;
  bool nnp_unobservable_ = false;
};

}  // namespace

std::unique_ptr<Sandbox> make_k8s_job(K8sClient& k8s, const K8sRunSettings& s, const std::string& run_id,
                                      const char* role, K8sObjects objects, ordered_json job, bool paused,
                                      const SandboxPolicy& policy, const K8sDocuments& d, K8sJobExtras extras) {
  auto j = std::make_unique<K8sJob>(k8s, s, run_id, role, std::move(objects), std::move(job), paused,
                                    std::move(extras));
  j->set_policy(policy, d);
  return j;
}

}  // namespace lazyagent
