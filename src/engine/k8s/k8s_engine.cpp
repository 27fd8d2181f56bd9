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

namespace {

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
  s.ttl_seconds_after_finished = config.k8s.ttl_seconds_after_finished;
  s.isolation = config.k8s.isolation;
  if (s.isolation == "networkpolicy") s.runtime_class.clear();  // the CNI isolates, no RuntimeClass
  s.egress_probe_targets = config.k8s.egress_probe_targets;
  s.planner_egress = config.k8s.planner_egress;
  s.planner_egress_required = config.k8s.planner_egress_required;
  return s;
}

namespace {

// HOST:PORT (IPv6 in brackets) -> the addresses HOST resolves to, each
// "ADDR:PORT" / "[ADDR]:PORT", loopback dropped.
std::vector<std::string> resolve_host_port(const std::string& hp) {
  const auto colon = hp.rfind(':');
  if (colon == std::string::npos) return {};
  std::string host = hp.substr(0, colon);
  const std::string port = hp.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return {};
  std::vector<std::string> out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    std::string addr;
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
      addr = inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) continue;
      addr = "[" + std::string(inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf)) + "]";
    } else {
      continue;
    }
    const std::string t = addr + ":" + port;
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

std::vector<std::string> k8s_egress_targets(const std::string& server_url, const std::string& api_service,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  auto add = [&](const char* label, const std::string& hp) {
    for (const auto& t : resolve_host_port(hp)) {
      const std::string entry = std::string(label) + "=" + t;
      if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(entry);
    }
  };
  // https://HOST[:PORT][/path]
  std::string rest = server_url.substr(server_url.find("://") == std::string::npos ? 0 : server_url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  const bool bracketed = !rest.empty() && rest.front() == '[';
  const auto close = bracketed ? rest.find(']') : std::string::npos;
  const auto colon = rest.rfind(':');
  const bool has_port = colon != std::string::npos && (!bracketed || colon > close);
  if (!rest.empty()) add("api", has_port ? rest : rest + ":443");
  if (!api_service.empty()) add("api-service", api_service);
  for (const auto& e : extra) add("config", e);
  return out;
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
    (*job)["spec"]["ttlSecondsAfterFinished"] = s.ttl_seconds_after_finished;
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

ordered_json add_planner_egress(K8sDocuments& d, const K8sRunSettings& s, const std::string& run_id,
                                const std::string& probe_targets) {
  if (s.planner_egress.empty()) return nullptr;
  ordered_json& pod = d.planner_job["spec"]["template"]["spec"];
  ordered_json& planner = pod["containers"][0];
  const ordered_json mount = {{"name", "egress"}, {"mountPath", kPlannerEgressDir}};
  ordered_json probe = {
      {"name", "egress-probe"},
      {"image", d.sandbox_job["spec"]["template"]["spec"]["containers"][0]["image"]},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {"/bin/sh", "-c", planner_egress_probe_script(), "sh", probe_targets}},
      {"workingDir", "/"},
      {"securityContext", planner["securityContext"]},
      {"resources", planner["resources"]},
      {"volumeMounts", ordered_json::array({mount})},
  };
  planner["volumeMounts"].push_back({{"name", "egress"}, {"mountPath", kPlannerEgressDir}, {"readOnly", true}});
  std::string allow;
  for (const auto& a : s.planner_egress) allow += (allow.empty() ? "" : " ") + a;
  for (const std::string a : {"--egress-report", kPlannerEgressFile, "--egress-allow"}) planner["args"].push_back(a);
  planner["args"].push_back(allow);
  if (s.planner_egress_required) planner["args"].push_back("--egress-required");
  // Last: a new key of an ordered_json moves its members (`planner` is one).
  pod["volumes"].push_back({{"name", "egress"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Mi"}}}});
  pod["initContainers"] = ordered_json::array({probe});
  ordered_json np = {{"apiVersion", "networking.k8s.io/v1"},
                     {"kind", "NetworkPolicy"},
                     {"metadata", {{"name", run_id + "-planner-egress"}, {"namespace", s.ns}}},
                     {"spec",
                      {{"podSelector", {{"matchLabels", d.planner_job["spec"]["template"]["metadata"]["labels"]}}},
                       {"policyTypes", {"Ingress", "Egress"}},
                       {"egress", planner_egress_rules(s.planner_egress)}}}};
  for (const auto& [k, v] : k8s_owner_labels("planner", run_id)) np["metadata"]["labels"][k] = v;
  return np;
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
    e.image_id = cs.value("imageID", "");
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

constexpr std::size_t kK8sLogSlack = 4096;  // the pod log's own framing, on top of the pipeline's cap

// Deletes every object of one run and role on every path out of the
// pipeline. The calls are not interruptible: after ^C they still run to the end.
class RunObjects {
 public:
  RunObjects(K8sClient& k, std::string ns, const std::string& run_id, const char* role)
      : k8s_(k), ns_(std::move(ns)), selector_(selector_for_run(run_id) + "," + kLabelRole + "=" + role) {}
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
         std::vector<std::pair<const K8sKind*, ordered_json>> objects, ordered_json job, bool paused)
      : k8s_(k), s_(s), role_(role), objects_(std::move(objects)), job_(std::move(job)), paused_(paused),
        guard_(k, s.ns, run_id, role) {
    job_name_ = job_["metadata"]["name"].get<std::string>();
    names_[std::string(role) + "_job"] = job_name_;
  }

  std::string id() const override { return pod_.empty() ? "" : s_.ns + "/" + pod_; }

  // The Job first, paused (parallelism 0: no pod yet), then its ConfigMaps
  // and NetworkPolicy with an owner reference to it, so that deleting the
  // Job (its TTL after it finished, `kubectl delete job`) deletes them too:
  // collection that does not rest on this process. The pod starts only at
  // start(), once every object exists (and, for the sandbox, was verified).
  Status create() override {
    guard_.arm();
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
    if (found.empty()) return ok_status();
    std::string all;
    for (const auto& f : found) all += (all.empty() ? "" : "; ") + f;
    return engine_error("the sandbox Kubernetes stored does not match the policy, refusing to start it: " + all);
  }

  Status start() override {
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

  Status remove() override { return guard_.remove_now(); }

  nlohmann::json describe() const override { return names_; }

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
      names_[kind == &kK8sNetworkPolicies ? "network_policy" : role_ == "planner" ? "task_configmap" : "seed_configmap"] = name;
    }
  }

 private:
  static constexpr const char* kNnpNote =
      "no_new_privs not observable in the pod: gVisor's /proc/self/status has no NoNewPrivs line "
      "(allowPrivilegeEscalation: false is in the spec)";

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
  RunObjects guard_;  // destroyed first: deletes what was created
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

// Collects the differences between `sent` and `stored` under `path`.
void stored_diff(const json& sent, const json& stored, const std::string& path, std::vector<std::string>* out) {
  if (sent.is_object()) {
    if (!stored.is_object()) {
      out->push_back(path + " is not an object any more");
      return;
    }
    for (const auto& [k, v] : sent.items()) {
      if (!stored.contains(k)) {
        out->push_back(path + "." + k + " was dropped");
        continue;
      }
      stored_diff(v, stored[k], path + "." + k, out);
    }
    return;
  }
  if (sent.is_array()) {
    if (!stored.is_array() || stored.size() != sent.size()) {
      out->push_back(path + " has " + std::to_string(stored.is_array() ? stored.size() : 0) + " entries, not " +
                     std::to_string(sent.size()));
      return;
    }
    for (std::size_t i = 0; i < sent.size(); ++i) stored_diff(sent[i], stored[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (sent != stored) out->push_back(path + " is " + stored.dump() + ", " + sent.dump() + " was sent");
}

// Fields an admission webhook could add that would weaken the sandbox.
void added_fields(const json& stored, const std::string& path, std::vector<std::string>* out) {
  if (stored.is_array()) {
    for (std::size_t i = 0; i < stored.size(); ++i) added_fields(stored[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (!stored.is_object()) return;
  static const char* kDenied[] = {"hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace",
                                  "initContainers", "ephemeralContainers", "envFrom"};
  for (const auto& [k, v] : stored.items()) {
    for (const char* d : kDenied) {
      if (k == d && !(v.is_boolean() && !v.get<bool>()) && !(v.is_array() && v.empty())) {
        out->push_back(path + "." + k + " was added");
      }
    }
    added_fields(v, path + "." + k, out);
  }
}

}  // namespace

std::vector<std::string> k8s_stored_violations(const json& sent, const json& stored) {
  std::vector<std::string> out;
  stored_diff(sent, stored, "", &out);
  added_fields(stored, "", &out);
  return out;
}

K8sEngine::K8sEngine(std::unique_ptr<K8sClient> client, K8sRunSettings settings, std::optional<RunStore> store)
    : k8s_(std::move(client)), s_(std::move(settings)), store_(std::move(store)) {}

void K8sEngine::adapt_policy(SandboxPolicy* policy) const {
  // The pod runs as a non-root uid (export_k8s.h), not in podman's id mapping.
  policy->userns.enabled = false;
}

json K8sEngine::policy_json(const SandboxPolicy& policy, const Config&) const {
  json p = policy_to_json(policy);
  // Who runs the tests: the pod's fixed non-root uid (export_k8s.h), no id map.
  p["user"] = {{"mode", "non_root_uid"}, {"uid", kK8sSandboxUid}, {"uid_map", nullptr}, {"gid_map", nullptr}};
  // The runtime provenance names: the pod's RuntimeClass on Kubernetes.
  p["runtime"] = "k8s:" + (s_.runtime_class.empty() ? std::string("default") : s_.runtime_class);
  static const std::map<std::string, std::string> kProof = {
      {"runtime-nonet", "the RuntimeClass gives the pod no network: the isolation probe demands only lo (as on "
                        "podman), and the egress probe must reach nothing"},
      {"runtimeclass", "the RuntimeClass plus the deny-all NetworkPolicy: the pod has an interface; the egress "
                       "probe must have run and reached nothing (API server, node/gateway, cluster DNS, external "
                       "53/80/443, DNS lookup, UDP, IPv6)"},
      {"networkpolicy", "the CNI enforcing the deny-all NetworkPolicy: the pod has an interface; the egress probe "
                        "must have run and reached nothing (API server, node/gateway, cluster DNS, external "
                        "53/80/443, DNS lookup, UDP, IPv6)"}};
  json k = {{"backend", "k8s"},
            {"server", k8s_->connection().server},
            {"server_version", server_version_},
            {"namespace", s_.ns},
            {"objects", json::object()},
            {"provider_secret", s_.secret},
            {"isolation", s_.isolation},
            {"isolation_proof", kProof.count(s_.isolation) ? kProof.at(s_.isolation) : std::string()}};
  if (s_.isolation == "networkpolicy") {
    k["network"] = "the deny-all NetworkPolicy <run>-sandbox-deny-all, enforced by the cluster's CNI (no "
                   "RuntimeClass); checked by the egress probe in the pod";
  } else if (s_.isolation == "runtimeclass") {
    k["network"] = "RuntimeClass " + s_.runtime_class + " under the deny-all NetworkPolicy <run>-sandbox-deny-all; "
                   "checked by the egress probe in the pod";
  } else if (!s_.runtime_class.empty()) {
    k["network"] = "RuntimeClass " + s_.runtime_class +
                   " (on the local cluster: gVisor runsc --network=none under the runc shim: the pod's only "
                   "interface is its own loopback), kept under the deny-all NetworkPolicy <run>-sandbox-deny-all"
                   "; checked by the isolation probe in the pod";
  } else {
    k["network"] = "only the deny-all NetworkPolicy (no RuntimeClass): the probe refuses any pod with an interface "
                   "but lo, so on a CNI without NetworkPolicy no run can pass";
  }
  k["provider_transport"] = plain_http_ ? "plain http, opted in by k8s.plain_http_provider_ip=" +
                                              s_.plain_http_provider_ip +
                                              " (host.containers.internal in the planner pod)"
                                        : "https";
  // The planner pod's egress (k8s.planner_egress); whether the cluster
  // enforced it is the planner's probe's, in the task record.
  k["planner_egress"] = s_.planner_egress.empty()
                            ? json("none: the planner pod has no egress policy (k8s.planner_egress unset)")
                            : json{{"allowed", s_.planner_egress},
                                   {"policy", "NetworkPolicy <run>-planner-egress"},
                                   {"required", s_.planner_egress_required}};
  p["k8s"] = k;
  return p;
}

Status K8sEngine::check(const ProgressFn& progress) {
  if (!dns_label(s_.ns)) return usage_error("namespace '" + s_.ns + "': needs 1-63 characters of a-z, 0-9 and '-'");
  if (!s_.runtime_class.empty() && !dns_label(s_.runtime_class)) {
    return usage_error("k8s.runtime_class '" + s_.runtime_class + "' is not a valid name");
  }
  auto v = k8s_->version();
  if (!v) return v.error();
  server_version_ = v->value("gitVersion", "");
  auto ns = k8s_->namespace_exists(s_.ns);
  if (!ns) return ns.error();
  if (!*ns) return usage_error("namespace '" + s_.ns + "' does not exist (kubectl create namespace " + s_.ns + ")");
  auto reaped = reap(false);
  if (!reaped) return reaped.error();
  if (!reaped->removed.empty() && progress) {
    progress("reaped " + std::to_string(reaped->removed.size()) + " object(s) left by crashed runs");
  }
  return ok_status();
}

Result<K8sDocuments> K8sEngine::documents(const Config& config, const SandboxPolicy& policy, const SeedSnapshot& seed,
                                          const std::vector<FileWrite>* writes, const PlannerTask* task,
                                          const std::string& run_id) const {
  ExportInput in;
  in.config = config;
  in.policy = policy;
  in.planner = planner_request_from_config(config);
  in.seed = seed;
  if (writes) in.writes = *writes;
  if (task) in.task = *task;
  in.name = run_id;
  in.k8s_namespace = s_.ns;
  auto docs = k8s_documents(in);
  if (!docs) return docs.error();
  adapt_documents(*docs, s_, run_id);
  return docs;
}

Result<std::unique_ptr<Sandbox>> K8sEngine::prepare_sandbox(const SandboxSpec& spec) {
  if (server_version_.empty()) {  // an eval worker whose engine was not the one checked
    if (auto v = k8s_->version(); v) server_version_ = v->value("gitVersion", "");
  }
  SandboxPolicy policy = spec.policy;
  policy.egress_probe_targets = egress_targets();
  auto d = documents(*spec.config, policy, *spec.seed, spec.writes, nullptr, spec.run_id);
  if (!d) return d.error();
  auto job = std::make_unique<K8sJob>(
      *k8s_, s_, spec.run_id, "sandbox",
      std::vector<std::pair<const K8sKind*, ordered_json>>{{&kK8sConfigMaps, d->seed_configmap},
                                                           {&kK8sNetworkPolicies, d->network_policy}},
      d->sandbox_job, true);
  job->set_policy(policy, *d);
  return std::unique_ptr<Sandbox>(std::move(job));
}

// The API server as the kubeconfig names it, the `kubernetes` Service in
// `default` when this account may read it (the namespaced Role of
// docs/k8s-rbac.yaml may not: then the probe still tries kubernetes.default
// by name), and the config's; once per engine.
const std::vector<std::string>& K8sEngine::egress_targets() {
  if (egress_targets_) return *egress_targets_;
  std::string service;
  static constexpr K8sKind kServices{"/api/v1", "services", "Service"};
  if (auto svc = k8s_->get(kServices, "default", "kubernetes"); svc && *svc) {
    const std::string ip = (**svc).value("/spec/clusterIP"_json_pointer, std::string());
    const int port = (**svc).value("/spec/ports/0/port"_json_pointer, 443);
    if (!ip.empty() && ip != "None") {
      service = (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
    }
  }
  egress_targets_ = k8s_egress_targets(k8s_->connection().server, service, s_.egress_probe_targets);
  return *egress_targets_;
}

// The provider Secret exists with its three keys; only base_url's scheme
// is looked at (plain http needs the opt-in).
Status K8sEngine::check_planner(const Config&) {
  auto secret = k8s_->get(kK8sSecrets, s_.ns, s_.secret);
  if (!secret) return secret.error();
  if (!*secret) {
    return usage_error("the provider Secret " + s_.ns + "/" + s_.secret +
                       " does not exist: run `lazyagent-oci configure --backend k8s` (or name yours with k8s.secret)");
  }
  const json data = (**secret).value("data", json::object());
  for (const char* key : {kSecretBaseUrl, kSecretModel, kSecretApiKey}) {
    if (!data.contains(key)) {
      return usage_error("the provider Secret " + s_.ns + "/" + s_.secret + " has no key '" + key +
                         "' (it needs base_url, model, api_key)");
    }
  }
  // A Secret's data is base64; only the URL's scheme is looked at.
  const auto url = base64_decode(data.value(kSecretBaseUrl, ""));
  if (!url) return usage_error("the provider Secret " + s_.ns + "/" + s_.secret + ": base_url is not valid base64");
  plain_http_ = url->rfind("http://", 0) == 0;
  if (plain_http_ && s_.plain_http_provider_ip.empty()) {
    return usage_error("the provider Secret's base_url uses plain http; from inside the cluster that needs the "
                       "opt-in k8s.plain_http_provider_ip in the config (the address host.containers.internal "
                       "resolves to in the planner pod)");
  }
  return ok_status();
}

Result<std::unique_ptr<Container>> K8sEngine::prepare_planner(const PlannerSpec& spec) {
  SandboxPolicy policy = policy_from_config(*spec.config, spec.config->timeouts.test_seconds);
  adapt_policy(&policy);
  auto d = documents(*spec.config, policy, *spec.seed, nullptr, spec.task, spec.run_id);
  if (!d) return d.error();
  std::vector<std::pair<const K8sKind*, ordered_json>> objects{{&kK8sConfigMaps, d->task_configmap}};
  if (!s_.planner_egress.empty()) {
    std::string targets;
    for (const auto& t : egress_targets()) targets += (targets.empty() ? "" : " ") + t;
    objects.emplace_back(&kK8sNetworkPolicies, add_planner_egress(*d, s_, spec.run_id, targets));
  }
  auto job = std::make_unique<K8sJob>(*k8s_, s_, spec.run_id, "planner", std::move(objects), d->planner_job, false);
  job->set_policy(policy, *d);
  return std::unique_ptr<Container>(std::move(job));
}

Result<ReapReport> K8sEngine::reap(bool all) {
  auto report = reap_k8s(*k8s_, s_.ns, all);
  // The run store's leftovers (temp files of dead writers, records of runs
  // killed while they ran): swept as on podman (store_sweep.h).
  if (report && store_) sweep_store(*store_, &*report);
  return report;
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
