#include "k8s_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <ctime>
#include <regex>
#include <sstream>
#include <thread>

#include "interrupt.h"
#include "isolation_probe.h"
#include "ownership.h"
#include "patch_contract.h"
#include "planner_policy.h"
#include "planner_run.h"
#include "planner_task.h"
#include "provenance.h"
#include "sandbox_policy.h"
#include "seed_snapshot.h"
#include "terminal_text.h"
#include "verdict.h"

namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr std::size_t kMaxPlannerLog = 2 << 20;

long ms_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

std::string label_safe(std::string v) {
  for (char& c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  if (v.size() > 63) v.resize(63);
  while (!v.empty() && !std::isalnum(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

bool dns_label(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, re);
}

std::string selector_for_run(const std::string& run_id) { return std::string(kLabelRun) + "=" + run_id; }

}  // namespace

K8sRunSettings k8s_settings_from_config(const Config& config) {
  K8sRunSettings s;
  s.ns = config.k8s.ns;
  s.secret = config.k8s.secret;
  s.runtime_class = config.k8s.runtime_class == "none" ? "" : config.k8s.runtime_class;
  s.plain_http_provider_ip = config.k8s.plain_http_provider_ip;
  return s;
}

std::map<std::string, std::string> k8s_owner_labels(const std::string& role, const std::string& run_id) {
  auto labels = owner_labels(current_owner(), role, run_id);
  std::string& owner = labels[kLabelOwner];
  const auto at = owner.find('@');
  if (at != std::string::npos) owner[at] = '.';  // uid is digits: the first '.' splits it back
  for (auto& [k, v] : labels) v = label_safe(v);
  return labels;
}

std::map<std::string, std::string> owner_labels_from_k8s(const json& labels) {
  std::map<std::string, std::string> out;
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  if (auto it = out.find(kLabelOwner); it != out.end()) {
    const auto dot = it->second.find('.');
    if (dot != std::string::npos) it->second[dot] = '@';
  }
  return out;
}

void adapt_documents(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id) {
  auto label = [&](ordered_json& meta, const char* role) {
    for (const auto& [k, v] : k8s_owner_labels(role, run_id)) meta["labels"][k] = v;
  };
  label(d.seed_configmap["metadata"], "sandbox");
  label(d.task_configmap["metadata"], "planner");
  label(d.network_policy["metadata"], "sandbox");
  for (auto* job : {&d.planner_job, &d.sandbox_job}) {
    const char* role = job == &d.planner_job ? "planner" : "sandbox";
    label((*job)["metadata"], role);
    label((*job)["spec"]["template"]["metadata"], role);
  }
  // The run deletes its objects itself, right away; the export's TTL stays
  // as a backstop for a run killed with SIGKILL (and `reap`).
  ordered_json& planner = d.planner_job["spec"]["template"]["spec"];
  for (auto& v : planner["volumes"]) {
    if (v.contains("secret")) v["secret"]["secretName"] = s.secret;
  }
  if (!s.plain_http_provider_ip.empty()) {
    planner["hostAliases"] = ordered_json::array(
        {{{"ip", s.plain_http_provider_ip}, {"hostnames", {"host.containers.internal"}}}});
  }
  if (!s.runtime_class.empty()) d.sandbox_job["spec"]["template"]["spec"]["runtimeClassName"] = s.runtime_class;
}

void split_planner_log(const std::string& log, std::string* patch, std::string* planner_lines) {
  std::istringstream in(log);
  std::string line;
  patch->clear();
  planner_lines->clear();
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '{') *patch = line;
    else *planner_lines += line + "\n";
  }
}

PodEnd pod_end(const json& pod) {
  PodEnd e;
  const json statuses = pod.value("/status/containerStatuses"_json_pointer, json::array());
  for (const auto& cs : statuses) {
    const json state = cs.value("state", json::object());
    if (state.contains("terminated")) {
      e.terminated = true;
      e.exit_code = state["terminated"].value("exitCode", -1);
      e.reason = state["terminated"].value("reason", "");
      return e;
    }
    if (state.contains("waiting")) {
      const std::string r = state["waiting"].value("reason", "");
      static const char* kStuck[] = {"ErrImageNeverPull", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
                                     "CreateContainerConfigError", "CreateContainerError", "RunContainerError"};
      for (const char* s : kStuck) {
        if (r == s) e.stuck = r + ": " + state["waiting"].value("message", "");
      }
    }
  }
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  if (!e.terminated && (phase == "Failed" || phase == "Succeeded")) {
    e.terminated = true;
    e.reason = pod.value("/status/reason"_json_pointer, phase);
  }
  return e;
}

namespace {

// Deletes everything of one run on every path out of the pipeline. The
// calls are not interruptible: after ^C they still run to the end.
class RunObjectsGuard {
 public:
  RunObjectsGuard(K8sClient& k, std::string ns, std::string run_id)
      : k8s_(k), ns_(std::move(ns)), selector_(selector_for_run(run_id)) {}
  ~RunObjectsGuard() {
    if (armed_) (void)remove_now();
  }
  void arm() { armed_ = true; }
  Status remove_now() {
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

struct PodRun {
  std::string pod;
  PodEnd end;
  bool timed_out = false;
  std::string log;
  bool log_truncated = false;
};

class K8sPipeline {
 public:
  K8sPipeline(const K8sRunRequest& req, K8sClient& k8s, const RunStore& store, const ProgressFn& progress)
      : req_(req), k8s_(k8s), store_(store), progress_(progress) {}

  Result<TestResult> run() {
    res_.run_id = new_run_id();
    guard_ = std::make_unique<RunObjectsGuard>(k8s_, req_.k8s.ns, res_.run_id);
    policy_ = policy_from_config(req_.config, req_.timeout_seconds);
    // The pod runs as a non-root uid (export_k8s.h), not in podman's id mapping.
    policy_.userns.enabled = false;
    res_.image = policy_.image;
    if (auto st = store_.ensure(); !st) return st.error();
    auto st = steps();
    if (!st) {
      (void)guard_->remove_now();
      const bool interrupted = st.error().kind == ErrorKind::kInterrupted;
      save(interrupted ? "interrupted" : "error", st.error().message);
      return st.error()
          .context("run " + res_.run_id + " (kubernetes " + req_.k8s.ns + ")")
          .with_id("run_id", res_.run_id)
          .with_id("planner_task_id", res_.planner.is_object() ? res_.run_id : "");  // its task record exists
    }
    return res_;
  }

 private:
  Status steps() {
    using Step = Status (K8sPipeline::*)();
    for (auto [name, fn] : std::initializer_list<std::pair<const char*, Step>>{
             {"engine", &K8sPipeline::engine}, {"plan", &K8sPipeline::plan}, {"validate", &K8sPipeline::validate}}) {
      if (req_.patch_json && std::string(name) == "plan") {
        patch_json_ = *req_.patch_json;  // given: no planner
        continue;
      }
      if (auto st = timed(name, [&] { return (this->*fn)(); }); !st) return st;
      if (res_.status == "refused") return finish_refused();
    }
    for (auto [name, fn] : std::initializer_list<std::pair<const char*, Step>>{
             {"sandbox", &K8sPipeline::sandbox}, {"logs", &K8sPipeline::logs}, {"remove", &K8sPipeline::remove}}) {
      if (auto st = timed(name, [&] { return (this->*fn)(); }); !st) return st;
    }
    judge_and_save();
    return ok_status();
  }

  template <typename F>
  Status timed(const char* step, F&& f) {
    if (progress_) progress_(step);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = f();
    res_.timings.push_back({step, ms_since(t0)});
    if (st && interrupted_signal() != 0) {
      return Error{ErrorKind::kInterrupted, "interrupted by signal " + std::to_string(interrupted_signal())};
    }
    return st;
  }

  Status engine() {
    const K8sRunSettings& s = req_.k8s;
    if (!dns_label(s.ns)) return usage_error("namespace '" + s.ns + "': needs 1-63 characters of a-z, 0-9 and '-'");
    if (!s.runtime_class.empty() && !dns_label(s.runtime_class)) {
      return usage_error("k8s.runtime_class '" + s.runtime_class + "' is not a valid name");
    }
    auto v = k8s_.version();
    if (!v) return v.error();
    server_version_ = v->value("gitVersion", "");
    auto ns = k8s_.namespace_exists(s.ns);
    if (!ns) return ns.error();
    if (!*ns) return usage_error("namespace '" + s.ns + "' does not exist (kubectl create namespace " + s.ns + ")");
    if (!req_.patch_json) {
      if (auto st = check_provider_secret(); !st) return st;
    }
    auto reaped = reap_k8s(k8s_, s.ns, false);
    if (!reaped) return reaped.error();
    if (!reaped->removed.empty() && progress_) {
      progress_("reaped " + std::to_string(reaped->removed.size()) + " object(s) left by crashed runs");
    }
    auto seed = snapshot_seed(req_.config.seed);
    if (!seed) return seed.error().context("reading the seed");
    seed_ = std::move(*seed);
    res_.seed_sha256 = seed_.sha256;
    return ok_status();
  }

  // The provider Secret exists with its three keys; only base_url's scheme
  // is looked at (plain http needs the opt-in).
  Status check_provider_secret() {
    const K8sRunSettings& s = req_.k8s;
    auto secret = k8s_.get(kK8sSecrets, s.ns, s.secret);
    if (!secret) return secret.error();
    if (!*secret) {
      return usage_error("the provider Secret " + s.ns + "/" + s.secret +
                         " does not exist: run `lazyagent-oci configure --backend k8s` (or name yours with k8s.secret)");
    }
    // Only base_url's scheme is looked at: plain http needs the opt-in.
    std::string scheme_note;
    const json data = (**secret).value("data", json::object());
    for (const char* key : {kSecretBaseUrl, kSecretModel, kSecretApiKey}) {
      if (!data.contains(key)) {
        return usage_error("the provider Secret " + s.ns + "/" + s.secret + " has no key '" + key +
                           "' (it needs base_url, model, api_key)");
      }
    }
    const std::string url_b64 = data.value(kSecretBaseUrl, "");
    plain_http_ = url_b64.rfind("aHR0cDov", 0) == 0;  // base64 of "http:/"
    if (plain_http_ && s.plain_http_provider_ip.empty()) {
      return usage_error("the provider Secret's base_url uses plain http; from inside the cluster that needs the "
                         "opt-in k8s.plain_http_provider_ip in the config (the address host.containers.internal "
                         "resolves to in the planner pod)");
    }
    return ok_status();
  }

  ExportInput export_input(const std::optional<Patch>& patch) const {
    ExportInput in;
    in.config = req_.config;
    in.policy = policy_;
    in.planner = planner_request_from_config(req_.config);
    in.seed = seed_;
    in.patch = patch;
    in.name = res_.run_id;
    in.k8s_namespace = req_.k8s.ns;
    in.instruction = req_.instruction;
    return in;
  }

  // Creates a Job and waits for its pod to end; reads the pod's log.
  Result<PodRun> run_job(const ordered_json& job, long timeout_seconds, std::size_t log_bytes, const char* container) {
    const std::string name = job["metadata"]["name"].get<std::string>();
    guard_->arm();
    if (auto c = k8s_.create(kK8sJobs, req_.k8s.ns, json(job)); !c) return c.error();
    PodRun out;
    K8sListQuery q;
    q.label_selector = "job-name=" + name;
    std::string stuck;
    auto end = k8s_.watch_until(
        kK8sPods, req_.k8s.ns, q,
        [&](const std::string& type, const json& pod) {
          out.pod = pod.value("/metadata/name"_json_pointer, out.pod);
          if (type == "DELETED") return true;  // the Job's deadline removed it
          const PodEnd e = pod_end(pod);
          if (!e.stuck.empty()) stuck = e.stuck;
          return e.terminated || !e.stuck.empty();
        },
        (timeout_seconds + req_.k8s.startup_slack_seconds) * 1000);
    if (!end) {
      if (end.error().kind != ErrorKind::kTimeout) return end.error();
      out.timed_out = true;
      return out;
    }
    if (!stuck.empty()) return engine_error("Job " + name + ": pod " + out.pod + " cannot start: " + stuck);
    if (end->event_type == "DELETED" || end->object.is_null()) {
      out.timed_out = true;
      return out;
    }
    out.end = pod_end(end->object);
    // A pod that failed without its container's own termination record was
    // killed from outside: the Job's activeDeadlineSeconds (the deadline).
    if (out.end.reason == "DeadlineExceeded" || (out.end.terminated && out.end.exit_code < 0)) {
      out.timed_out = true;
      return out;
    }
    auto log = k8s_.pod_log(req_.k8s.ns, out.pod, container, log_bytes);
    if (!log) {
      const json term = end->object.value("/status/containerStatuses/0/state/terminated"_json_pointer, json::object());
      return log.error().context("the container ended (exit " + std::to_string(out.end.exit_code) + ", " +
                                 out.end.reason + (term.contains("message") ? ": " + term.value("message", "") : "") +
                                 ") but its log cannot be read");
    }
    out.log = to_valid_utf8(log->body);
    out.log_truncated = log->truncated || log->body.size() >= log_bytes;
    return out;
  }

  Status plan() {
    auto docs = k8s_documents(export_input(std::nullopt));
    if (!docs) return docs.error();
    adapt_documents(*docs, req_.k8s, res_.run_id);
    names_["planner_job"] = docs->planner_job["metadata"]["name"];
    planner_ = {{"task_id", res_.run_id}, {"status", "running"}, {"job", names_["planner_job"]}};
    save("planning", "");
    guard_->arm();
    if (auto c = k8s_.create(kK8sConfigMaps, req_.k8s.ns, json(docs->task_configmap)); !c) return c.error();
    if (progress_) progress_("planner: Job " + names_["planner_job"].get<std::string>() + " asks the provider");
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_job(docs->planner_job, req_.config.timeouts.planner_seconds, kMaxPlannerLog, "planner");
    if (!r) return r.error().context("the planner Job");
    names_["planner_pod"] = r->pod;
    PlannerOutcome o;
    o.task_id = res_.run_id;
    o.container_id = req_.k8s.ns + "/" + r->pod;
    o.timed_out = r->timed_out;
    o.exit_code = r->end.exit_code;
    split_planner_log(r->log, &o.patch_json, &o.log);
    o.summary = parse_planner_summary(o.log);
    o.ms = ms_since(t0);
    (void)store_.write_text("tasks", o.task_id + ".log", o.log);
    planner_ = task_record(o, res_.run_id);
    planner_["job"] = names_["planner_job"];
    planner_["pod"] = r->pod;
    (void)store_.write_in("tasks", o.task_id, planner_);
    res_.planner = planner_;
    if (o.exit_code == 4) {
      res_.status = "refused";
      res_.reason = "patch refused by the planner";
      res_.findings = findings_from_json(planner_["findings"]);
      return ok_status();
    }
    if (o.timed_out) {
      return Error{ErrorKind::kPlanner, "planner Job " + names_["planner_job"].get<std::string>() +
                                            ": did not finish within its deadline"};
    }
    if (o.exit_code != 0) {
      std::string why = o.summary.is_object() ? o.summary.value("error", "") : "";
      std::istringstream in(o.log);
      std::string line;
      while (why.empty() && std::getline(in, line)) {
        if (line.rfind("planner: ", 0) == 0) why = line.substr(9, 300);
      }
      if (why.empty()) why = "it exited " + std::to_string(o.exit_code);
      return Error{ErrorKind::kPlanner, "planner pod " + r->pod + ": " + escape_for_terminal(why)};
    }
    patch_json_ = o.patch_json;
    return ok_status();
  }

  Status validate() {
    ContractResult c = validate_patch_json(patch_json_, contract_limits(req_.config));
    std::vector<Finding> findings = c.findings;
    res_.suspicious = c.suspicious;
    if (c.ok()) {
      patch_ = c.patch;
      res_.patch_sha256 = patch_sha256(patch_);
      res_.changed_paths = changed_paths(seed_, patch_);
      findings = check_patch_against_seed(seed_, patch_);
      // The patch as proven and the seed's manifest, kept for `verify` (provenance.h).
      if (auto st = store_.write_text(kArtifactsDir, patch_artifact_name(res_.run_id), patch_to_json(patch_)); !st) {
        return st.error().context("storing the patch");
      }
      if (auto st = store_.write_text(kArtifactsDir, seed_manifest_artifact_name(res_.run_id),
                                      seed_manifest(seed_).dump(1) + "\n");
          !st) {
        return st.error().context("storing the seed manifest");
      }
    }
    if (!findings.empty()) {
      res_.findings = std::move(findings);
      res_.status = "refused";
      res_.reason = "patch refused: " + std::to_string(res_.findings.size()) + " finding(s)";
    }
    return ok_status();
  }

  Status finish_refused() {
    if (auto st = guard_->remove_now(); !st) return st;
    res_.policy = policy_json();
    save("refused", "");
    return ok_status();
  }

  Status sandbox() {
    auto docs = k8s_documents(export_input(patch_));
    if (!docs) return docs.error();
    adapt_documents(*docs, req_.k8s, res_.run_id);
    docs_ = *docs;
    names_["sandbox_job"] = docs->sandbox_job["metadata"]["name"];
    names_["network_policy"] = docs->network_policy["metadata"]["name"];
    names_["seed_configmap"] = docs->seed_configmap["metadata"]["name"];
    guard_->arm();
    if (auto c = k8s_.create(kK8sConfigMaps, req_.k8s.ns, json(docs->seed_configmap)); !c) return c.error();
    if (auto c = k8s_.create(kK8sNetworkPolicies, req_.k8s.ns, json(docs->network_policy)); !c) return c.error();
    const auto cap = static_cast<std::size_t>(policy_.log_bytes) + 8192;
    auto r = run_job(docs->sandbox_job, req_.timeout_seconds, cap, "sandbox");
    if (!r) return r.error().context("the sandbox Job");
    sandbox_run_ = *r;
    names_["sandbox_pod"] = r->pod;
    res_.sandbox_id = req_.k8s.ns + "/" + r->pod;
    return ok_status();
  }

  // How the probe is judged: the local cluster's RuntimeClass is gVisor
  // (scripts/runsc-nonet.py); any other pod is judged strictly, as runc.
  std::string probe_runtime() const { return req_.k8s.runtime_class == "lazyagent-nonet" ? "runsc" : "runc"; }

  Status logs() {
    const ProbeReport probe = take_probe(sandbox_run_.log, &res_.test_output);
    // A pod killed at its deadline may have left no log to judge: a timeout verdict.
    auto violations = sandbox_run_.timed_out && !probe.found ? std::vector<std::string>{}
                                                              : probe_violations(probe, policy_, probe_runtime());
    // gVisor's /proc/self/status has no NoNewPrivs line at all (runc's says 0
    // or 1): under the no-network RuntimeClass an absent line cannot be
    // judged and is reported as not observable; a "0" is still a violation.
    // (Measured: prctl(PR_GET_NO_NEW_PRIVS) inside the gVisor pod returns 1.)
    if (!req_.k8s.runtime_class.empty() && probe.found && probe.no_new_privs.empty()) {
      violations.erase(std::remove(violations.begin(), violations.end(), std::string("no_new_privs is not set")),
                       violations.end());
      nnp_unobservable_ = true;
    }
    res_.isolation_probe = probe_to_json(probe, violations);
    probe_ifaces_ = probe.interfaces;
    if (!sandbox_run_.timed_out && !probe.found) {
      return engine_error("the sandbox pod " + sandbox_run_.pod +
                          " printed no isolation probe block; the verdict is void");
    }
    if (!violations.empty()) {
      std::string all;
      for (const auto& v : violations) all += (all.empty() ? "" : "; ") + v;
      return engine_error("the isolation probe inside the sandbox pod " + sandbox_run_.pod + " found: " + all +
                          "; the verdict is void");
    }
    output_for_verdict_ = res_.test_output;
    const bool cut_in_sandbox = res_.test_output.find(kOutputCutMarker) != std::string::npos;
    res_.test_output_truncated = cut_in_sandbox || sandbox_run_.log_truncated;
    if (sandbox_run_.log_truncated && !cut_in_sandbox) {
      res_.test_output += "\n" + std::string(kOutputCutMarker) + " by the pod log limit]\n";
    }
    return ok_status();
  }

  Status remove() { return guard_->remove_now(); }

  json policy_json() const {
    json p = policy_to_json(policy_);
    // Who runs the tests: the pod's fixed non-root uid (export_k8s.h), no id map.
    const json uid = docs_.sandbox_job.is_object()
                         ? docs_.sandbox_job.value("/spec/template/spec/securityContext/runAsUser"_json_pointer, json())
                         : json();
    p["user"] = {{"mode", "non_root_uid"}, {"uid", uid}, {"uid_map", nullptr}, {"gid_map", nullptr}};
    // The runtime provenance names: the pod's RuntimeClass on Kubernetes.
    p["runtime"] = "k8s:" + (req_.k8s.runtime_class.empty() ? std::string("default") : req_.k8s.runtime_class);
    json k = {{"backend", "k8s"},
              {"server", k8s_.connection().server},
              {"server_version", server_version_},
              {"namespace", req_.k8s.ns},
              {"objects", names_},
              {"provider_secret", req_.k8s.secret}};
    if (!req_.k8s.runtime_class.empty()) {
      k["network"] = "RuntimeClass " + req_.k8s.runtime_class +
                     " (on the local cluster: gVisor runsc --network=none under the runc shim: the pod's only "
                     "interface is its own loopback), kept under the deny-all NetworkPolicy " +
                     names_.value("network_policy", std::string("<run>-sandbox-deny-all")) +
                     "; checked by the isolation probe in the pod";
    } else {
      k["network"] = "only the deny-all NetworkPolicy (no RuntimeClass): the probe refuses any pod with an interface "
                     "but lo, so on a CNI without NetworkPolicy no run can pass";
    }
    k["probe_interfaces"] = probe_ifaces_;
    if (nnp_unobservable_) {
      k["probe_notes"] = json::array({"no_new_privs not observable in the pod: gVisor's /proc/self/status has no "
                                      "NoNewPrivs line (allowPrivilegeEscalation: false is in the spec)"});
    }
    k["provider_transport"] = plain_http_ ? "plain http, opted in by k8s.plain_http_provider_ip=" +
                                                req_.k8s.plain_http_provider_ip +
                                                " (host.containers.internal in the planner pod)"
                                          : "https";
    k["enforced"] = docs_.enforced;
    k["not_enforced"] = json::array();
    for (const auto& line : docs_.not_enforced) {
      // The export's network caveat is about NetworkPolicy alone; the RuntimeClass answers it.
      if (!req_.k8s.runtime_class.empty() && line.rfind("network: ", 0) == 0) continue;
      k["not_enforced"].push_back(line);
    }
    if (!req_.k8s.runtime_class.empty()) {
      k["enforced"].push_back("network: " + k["network"].get<std::string>());
      k["not_enforced"].push_back("memory/cpu limits under gVisor: runsc is given the pod's cgroup; not verified by a "
                                  "test here (podman's runsc path measured them as not enforced with --ignore-cgroups)");
    }
    p["k8s"] = k;
    return p;
  }

  void judge_and_save() {
    RunOutcome outcome;
    outcome.exit_code = sandbox_run_.timed_out ? 137 : sandbox_run_.end.exit_code;
    outcome.timed_out = sandbox_run_.timed_out;
    outcome.timeout_seconds = req_.timeout_seconds;
    outcome.output_truncated = res_.test_output_truncated;
    res_.test_exit_code = outcome.exit_code;
    const Verdict v = judge(outcome, output_for_verdict_);
    res_.tests_passed = v.passed;
    res_.reason = v.reason;
    res_.status = v.passed ? "passed" : "failed";
    res_.policy = policy_json();
    save(res_.status, "");
  }

  void save(const std::string& status, const std::string& error) {
    json rec = result_to_json(res_);
    rec["status"] = status;
    rec["kind"] = req_.patch_json ? "test" : "run";
    rec["backend"] = "k8s";
    rec["k8s"] = {{"namespace", req_.k8s.ns}, {"objects", names_}};
    if (res_.planner.is_null()) rec["planner"] = planner_;
    const Owner o = current_owner();
    rec["owner"] = {{"user_host", o.user_host}, {"pid", o.pid}, {"start_time", o.start_time}};
    rec["seed"] = req_.config.seed;
    rec["test_command"] = req_.config.test_command;
    rec["updated_at"] = static_cast<long>(std::time(nullptr));
    if (!error.empty()) rec["error"] = error;
    rec["provenance"] = build_provenance(rec);
    (void)store_.write(rec);
  }

  const K8sRunRequest& req_;
  K8sClient& k8s_;
  const RunStore& store_;
  const ProgressFn& progress_;
  std::unique_ptr<RunObjectsGuard> guard_;
  TestResult res_;
  SandboxPolicy policy_;
  SeedSnapshot seed_;
  std::string patch_json_;
  Patch patch_;
  K8sDocuments docs_;
  PodRun sandbox_run_;
  json planner_;
  json names_ = json::object();
  std::vector<std::string> probe_ifaces_;
  std::string server_version_;
  std::string output_for_verdict_;
  bool plain_http_ = false;
  bool nnp_unobservable_ = false;
};

}  // namespace

Result<TestResult> run_agent_k8s(const K8sRunRequest& req, K8sClient& k8s, const RunStore& store,
                                 const ProgressFn& progress) {
  K8sPipeline p(req, k8s, store, progress);
  return p.run();
}

Result<ReapReport> reap_k8s(K8sClient& k8s, const std::string& ns, bool all) {
  ReapReport report;
  std::map<std::string, bool> run_dead;  // run id -> owner gone
  for (const K8sKind* kind : {&kK8sJobs, &kK8sPods, &kK8sConfigMaps, &kK8sNetworkPolicies}) {
    auto l = k8s.list(*kind, ns, kLabelRun);
    if (!l) return l.error().context("reaping");
    for (const auto& item : l->value("items", json::array())) {
      const json labels = item.value("/metadata/labels"_json_pointer, json::object());
      const auto owner = owner_labels_from_k8s(labels);
      const std::string run = labels.value(kLabelRun, "");
      if (run.empty()) continue;
      const bool dead = all || !owner_alive(owner);
      auto [it, fresh] = run_dead.emplace(run, dead);
      if (!fresh) it->second = it->second && dead;  // any live object keeps the run
    }
  }
  for (const auto& [run, dead] : run_dead) {
    if (!dead) {
      report.left_running.push_back(ns + "/" + run);
      continue;
    }
    const std::string sel = selector_for_run(run);
    Status st = k8s.remove_all(kK8sJobs, ns, sel);
    if (st) st = k8s.remove_all(kK8sPods, ns, sel, 0);
    if (st) st = k8s.remove_all(kK8sConfigMaps, ns, sel);
    if (st) st = k8s.remove_all(kK8sNetworkPolicies, ns, sel);
    if (st) report.removed.push_back(ns + "/" + run + " (Jobs, pods, ConfigMaps, NetworkPolicies)");
    else report.errors.push_back(st.error().message);
  }
  return report;
}

}  // namespace lazyagent
