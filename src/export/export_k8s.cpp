#include "export/export_k8s.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/export_k8s_configmap.h"
#include "util/yaml_text.h"
#include "contract/planner_task.h"

namespace lazyagent {

using nlohmann::ordered_json;

namespace {

// Object names, all derived from ExportInput.name.
struct Names {
  std::string ns, run, seed_cm, task_cm, secret, planner_job, sandbox_job, netpol;
};

Result<Names> names_for(const ExportInput& in) {
  // DNS-1123 labels. 40 leaves room for the longest suffix ("-sandbox-deny-all")
  // and for the pod names the Job controller derives (job name + 6 chars).
  static const std::regex label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  if (in.name.empty() || in.name.size() > 40 || !std::regex_match(in.name, label)) {
    return usage_error("export name '" + in.name +
                       "': Kubernetes names need 1-40 characters of a-z, 0-9 and '-', "
                       "starting and ending with a letter or digit");
  }
  if (in.k8s_namespace.empty() || in.k8s_namespace.size() > 63 || !std::regex_match(in.k8s_namespace, label)) {
    return usage_error("namespace '" + in.k8s_namespace +
                       "': needs 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit");
  }
  const std::string& n = in.name;
  return Names{in.k8s_namespace, n, n + "-seed", n + "-task", n + kK8sSecretSuffix,
               n + "-planner", n + "-sandbox", n + "-sandbox-deny-all"};
}

// Kubernetes expands $(VAR) and turns $$ into $ in a container's command,
// args and env values; doubling every '$' makes the kubelet hand over the
// string exactly as written (the sandbox script is full of "$(...)").
std::string k8s_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '$') out += '$';
  }
  return out;
}

std::string bytes_quantity(std::int64_t b) {
  if (b > 0 && b % (1LL << 30) == 0) return std::to_string(b >> 30) + "Gi";
  if (b > 0 && b % (1LL << 20) == 0) return std::to_string(b >> 20) + "Mi";
  if (b > 0 && b % 1024 == 0) return std::to_string(b >> 10) + "Ki";
  return std::to_string(b);
}

std::string cpu_quantity(std::int64_t quota, std::int64_t period) {
  const long long milli = std::max(1LL, std::llround(1000.0 * static_cast<double>(quota) / static_cast<double>(period)));
  return milli % 1000 == 0 ? std::to_string(milli / 1000) : std::to_string(milli) + "m";
}

ordered_json labels(const Names& n, const char* role) {
  return {{kLabelRole, role}, {kLabelRun, n.run}};
}

ordered_json metadata(const std::string& name, const Names& n, const char* role) {
  return {{"name", name}, {"namespace", n.ns}, {"labels", labels(n, role)}};
}

// Pod Security "restricted" at pod level: a fixed non-root uid/gid (the
// image's own user decides nothing), fsGroup so the emptyDirs and the
// mounted ConfigMap/Secret files are the pod user's, the runtime's default
// seccomp filter.
ordered_json pod_security(std::int64_t uid) {
  return {{"runAsNonRoot", true}, {"runAsUser", uid}, {"runAsGroup", uid}, {"fsGroup", uid},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

// ... and at container level: no capabilities, no_new_privs, not privileged,
// read-only root (stricter than "restricted", same as the podman sandbox).
ordered_json container_security() {
  return {{"allowPrivilegeEscalation", false}, {"privileged", false}, {"readOnlyRootFilesystem", true},
          {"capabilities", {{"drop", {"ALL"}}}}};
}

ordered_json memory_dir(const std::string& name, std::int64_t bytes) {
  return {{"name", name}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", bytes_quantity(bytes)}}}};
}

ordered_json env_list(const std::map<std::string, std::string>& env) {
  ordered_json out = ordered_json::array();
  for (const auto& [k, v] : env) out.push_back({{"name", k}, {"value", k8s_literal(v)}});
  return out;
}

ordered_json job(ordered_json meta, std::int64_t deadline, ordered_json pod_labels, ordered_json pod_spec) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", std::move(meta)},
          {"spec",
           {{"backoffLimit", 0},  // a failed or timed-out run is a verdict, never retried
            {"activeDeadlineSeconds", deadline},
            {"ttlSecondsAfterFinished", kK8sTtlSecondsAfterFinished},
            {"template", {{"metadata", {{"labels", std::move(pod_labels)}}}, {"spec", std::move(pod_spec)}}}}}};
}

// A seed image's emptyDir on the node's disk, which its init container fills:
// room for the copy as the kubelet measures it (its disk blocks, not its
// bytes: a sizeLimit below that gets the pod evicted mid-run), plus slack.
ordered_json seed_image_volume(std::int64_t disk_bytes) {
  const std::int64_t room = ((disk_bytes * 5 / 4 + (16LL << 20)) >> 20) << 20;
  return {{"name", "seed"}, {"emptyDir", {{"sizeLimit", bytes_quantity(room)}}}};
}

// The seed image (pulled by digest) copies its /seed into the emptyDir, under
// the same restrictions and limits as the pod's container.
ordered_json seed_image_copier(const std::string& image, const ordered_json& limits) {
  return {{"name", "seed"},
          {"image", image},
          {"imagePullPolicy", "IfNotPresent"},
          {"command", {"/bin/busybox", "cp", "-R", std::string(kSeedMount) + "/.", "/out/"}},
          {"workingDir", "/"},
          {"securityContext", container_security()},
          {"resources", {{"limits", limits}, {"requests", limits}}},
          {"volumeMounts", {{{"name", "seed"}, {"mountPath", "/out"}}}}};
}

// The seed volume: the ConfigMap's items, or (a seed image, k8s_seed_image.h)
// an emptyDir on the node's disk the init container fills.
ordered_json seed_volume(const ExportInput& in, const Names& n, const ordered_json& seed_items) {
  if (in.k8s_seed_image.empty()) {
    return {{"name", "seed"},
            {"configMap", {{"name", n.seed_cm}, {"items", seed_items}, {"defaultMode", kConfigMapDefaultMode}}}};
  }
  return seed_image_volume(in.k8s_seed_image_bytes);
}

ordered_json sandbox_job(const ExportInput& in, const Names& n, const ordered_json& seed_items) {
  const SandboxPolicy& p = in.policy;
  // `env -i` first: the kubelet always adds KUBERNETES_SERVICE_* / KUBERNETES_PORT*
  // (even with enableServiceLinks: false) and keeps the image's ENV; the
  // test process gets exactly the allowlist, as under podman (unsetenvall).
  ordered_json command = {"/usr/bin/env", "-i"};
  for (const auto& [k, v] : p.env) command.push_back(k8s_literal(k + "=" + v));
  for (const auto& arg : sandbox_command(in.config.test_command, p.log_bytes, egress_targets_arg(p), EgressProbe::kAlways)) {
    command.push_back(k8s_literal(arg));
  }
  const ordered_json limits = {{"cpu", cpu_quantity(p.cpu_quota, p.cpu_period)}, {"memory", bytes_quantity(p.memory_bytes)}};
  ordered_json container = {
      {"name", "sandbox"},
      {"image", p.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", command},
      {"workingDir", "/"},
      {"env", env_list(p.env)},
      {"securityContext", container_security()},
      {"resources", {{"limits", limits}, {"requests", limits}}},  // Guaranteed QoS
      {"volumeMounts",
       {{{"name", "seed"}, {"mountPath", kSeedMount}, {"readOnly", true}},
        {{"name", "work"}, {"mountPath", kWorkDir}},
        {{"name", "tmp"}, {"mountPath", kTmpDir}}}},
  };
  ordered_json spec = {
      {"restartPolicy", "Never"},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"hostname", p.hostname},
      // No cluster DNS: names do not resolve, so DNS cannot carry data out
      // even on a cluster whose CNI ignores the NetworkPolicy.
      {"dnsPolicy", "None"},
      {"dnsConfig", {{"nameservers", {"127.0.0.1"}}}},
      {"terminationGracePeriodSeconds", 1},
      {"securityContext", pod_security(kK8sSandboxUid)},
      {"containers", {container}},
      {"volumes", {seed_volume(in, n, seed_items), memory_dir("work", p.work_tmpfs_bytes), memory_dir("tmp", p.tmp_tmpfs_bytes)}},
  };
  if (!in.k8s_seed_image.empty()) {
    spec["initContainers"] = ordered_json::array({seed_image_copier(in.k8s_seed_image, limits)});
  }
  ordered_json meta = metadata(n.sandbox_job, n, "sandbox");
  meta["annotations"] = {{"io.lazyagent.seed-sha256", in.seed.sha256}};
  if (!in.k8s_seed_image.empty()) meta["annotations"]["io.lazyagent.seed-image"] = in.k8s_seed_image;
  if (in.patched()) meta["annotations"]["io.lazyagent.patch-sha256"] = in.patch_id();
  return job(std::move(meta), p.timeout_seconds, labels(n, "sandbox"), std::move(spec));
}

ordered_json planner_job(const ExportInput& in, const Names& n) {
  const PlannerRequest& r = in.planner;
  const ordered_json limits = {{"cpu", "1"}, {"memory", bytes_quantity(r.memory_bytes)}};
  ordered_json container = {
      {"name", "planner"},
      {"image", r.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {"/usr/local/bin/lazyagent-oci"}},
      {"args", {"plan", "--task", kTaskFile, "--secrets-dir", kSecretsDir}},
      {"workingDir", "/"},
      {"env", env_list({{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}})},
      {"securityContext", container_security()},
      {"resources", {{"limits", limits}, {"requests", limits}}},
      {"volumeMounts",
       {{{"name", "task"}, {"mountPath", kTaskDir}, {"readOnly", true}},
        {{"name", "provider"}, {"mountPath", kSecretsDir}, {"readOnly", true}},
        {{"name", "tmp"}, {"mountPath", "/tmp"}}}},
  };
  // The user's Secret, by name only. 0440 + fsGroup: readable by the pod's
  // group, not world-readable; only the three keys the planner reads.
  ordered_json items = ordered_json::array();
  for (const char* key : {kSecretBaseUrl, kSecretModel, kSecretApiKey}) items.push_back({{"key", key}, {"path", key}});
  ordered_json spec = {
      {"restartPolicy", "Never"},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"hostname", "planner"},
      {"terminationGracePeriodSeconds", 5},
      {"securityContext", pod_security(kK8sPlannerUid)},
      {"containers", {container}},
      {"volumes",
       {{{"name", "task"}, {"configMap", {{"name", n.task_cm}}}},
        {{"name", "provider"}, {"secret", {{"secretName", n.secret}, {"items", items}, {"defaultMode", 0440}}}},
        memory_dir("tmp", 16LL << 20)}},
  };
  if (!in.k8s_planner_snapshot_image.empty()) {
    // The tools' snapshot: read-only at /seed, as the sandbox's copy is; no
    // nesting under the task ConfigMap's /task (a ConfigMap volume is
    // read-only: no mount point can be made inside it).
    ordered_json& c = spec["containers"][0];
    c["args"].push_back("--snapshot");
    c["args"].push_back(kSeedMount);
    c["volumeMounts"].push_back({{"name", "seed"}, {"mountPath", kSeedMount}, {"readOnly", true}});
    spec["volumes"].push_back(seed_image_volume(in.k8s_planner_snapshot_bytes));
    spec["initContainers"] = ordered_json::array({seed_image_copier(in.k8s_planner_snapshot_image, limits)});
  }
  return job(metadata(n.planner_job, n, "planner"), r.timeout_seconds, labels(n, "planner"), std::move(spec));
}

ordered_json network_policy(const Names& n) {
  // No ingress or egress rules with both policy types: nothing in, nothing out.
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", metadata(n.netpol, n, "sandbox")},
          {"spec", {{"podSelector", {{"matchLabels", labels(n, "sandbox")}}}, {"policyTypes", {"Ingress", "Egress"}}}}};
}

Result<ordered_json> task_configmap(const ExportInput& in, const Names& n) {
  const PlannerTask task = in.task ? *in.task : build_task(in.seed, in.config, in.instruction, n.run);
  // ASCII-only JSON (non-ASCII as \u escapes) keeps task.json a readable literal block.
  std::string text = task_to_json(task).dump(2, ' ', true) + "\n";
  // nlohmann leaves DEL raw, and YAML cannot carry it; in JSON text it can
  // only be inside a string, where \u007f means the same.
  for (auto p = text.find('\x7f'); p != std::string::npos; p = text.find('\x7f', p)) text.replace(p, 1, "\\u007f");
  if (text.size() > kConfigMapMaxBytes) {
    return usage_error("the planner's task.json is " + std::to_string(text.size()) + " bytes, more than a ConfigMap holds");
  }
  return ordered_json{{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", metadata(n.task_cm, n, "planner")},
                      {"data", {{"task.json", text}}}};
}

// What the manifests enforce and what they cannot, one line each (shown by
// the CLI and in README.txt). Stated against the podman sandbox's policy.
void policy_lines(const ExportInput& in, const Names& n, ExportBundle& b) {
  const SandboxPolicy& p = in.policy;
  auto& e = b.enforced;
  e.push_back("no secrets in the sandbox: no Secret volume or env, automountServiceAccountToken: false "
              "(no API token), enableServiceLinks: false");
  e.push_back("sandbox user: runAsNonRoot, uid/gid " + std::to_string(kK8sSandboxUid) +
              ", all capabilities dropped, allowPrivilegeEscalation: false (no_new_privs), seccomp RuntimeDefault: "
              "Pod Security 'restricted' (admission enforces it only where the namespace asks, 1.23+)");
  e.push_back("read-only root; /work (" + bytes_quantity(p.work_tmpfs_bytes) + ") and /tmp (" +
              bytes_quantity(p.tmp_tmpfs_bytes) +
              ") memory-backed emptyDirs, counted against the memory limit; their sizeLimit is the tmpfs size "
              "where the kubelet has SizeMemoryBackedVolumes (default since 1.22), else enforced by eviction");
  e.push_back(in.k8s_seed_image.empty()
                  ? "/seed: ConfigMap " + n.seed_cm + ", mounted read-only; the seed never comes from a host path"
                  : "/seed: the seed image " + in.k8s_seed_image +
                        " pulled by digest, copied by its init container into an emptyDir the sandbox mounts "
                        "read-only; the seed never comes from a host path");
  e.push_back("memory " + bytes_quantity(p.memory_bytes) + " and cpu " + cpu_quantity(p.cpu_quota, p.cpu_period) +
              " limits (cgroup; requests = limits); a memory kill is exit 137 / OOMKilled");
  e.push_back("time: activeDeadlineSeconds " + std::to_string(p.timeout_seconds) +
              " on the Job (counted from the Job's start, so scheduling and image pull count too), "
              "backoffLimit 0, restartPolicy Never: a failure or timeout is a verdict, never a retry");
  e.push_back("environment: exactly the allowlist (`env -i` in the command drops the KUBERNETES_* variables "
              "the kubelet always adds and the image's ENV)");
  e.push_back("no cluster DNS for the sandbox (dnsPolicy None, nameserver 127.0.0.1)");
  e.push_back("planner: the Secret " + n.secret + " by name, its keys mounted read-only at /run/secrets (0440, "
              "group " + std::to_string(kK8sPlannerUid) + "); same user/capability/read-only-root restrictions, "
              "memory limit, activeDeadlineSeconds " + std::to_string(in.planner.timeout_seconds));
  auto& x = b.not_enforced;
  x.push_back("network: the sandbox pod has an interface on the cluster network (podman's sandbox has only lo); "
              "the deny-all NetworkPolicy " + n.netpol + " isolates it only where the CNI plugin enforces "
              "NetworkPolicy (Calico, Cilium, ...; plain bridge/flannel do not, and then the pod reaches "
              "other pods, the node and beyond)");
  x.push_back("pids: a Pod spec has no pids limit (podman: " + std::to_string(p.pids) +
              "); only the kubelet's node-level podPidsLimit applies, if set");
  x.push_back("rlimits: nofile " + std::to_string(p.nofile) + " / nproc " + std::to_string(p.nproc) +
              " cannot be set per pod; the container runtime's defaults apply");
  x.push_back("mount options: /work and /tmp are not nosuid,nodev and /tmp is not noexec (podman's are); an "
              "emptyDir takes no mount options");
  x.push_back("output: capped at " + std::to_string(p.log_bytes) +
              " bytes only by the sandbox script's own head/tail; a process writing to the container's "
              "stdout directly bypasses it, and log rotation (containerLogMaxSize) is node-level");
  x.push_back("verification: nothing reads back what the kubelet and runtime applied (the podman path checks "
              "the generated OCI spec before start); an API server accepting these manifests proves "
              "they are valid, not that a node enforces them");
  x.push_back("image: '" + p.image + "' by tag, not digest (imagePullPolicy IfNotPresent)");
  x.push_back("planner network: egress is open (it must reach the provider); a NetworkPolicy allowing only the "
              "provider's address could restrict it where the CNI enforces NetworkPolicy");
  x.push_back("planner pids/rlimits: as for the sandbox (podman: pids " + std::to_string(in.planner.pids) + ")");
}

std::string how_to_run(const Names& n) {
  const std::string k = "kubectl -n " + n.ns + " ";
  std::string s;
  if (n.ns != "default") s += "kubectl create namespace " + n.ns + "\n";
  s += k + "create secret generic " + n.secret +
       " --from-literal=base_url=URL --from-literal=model=MODEL --from-file=api_key=KEYFILE\n";
  s += "kubectl apply -f .\n";
  s += k + "wait --for=condition=complete --timeout=600s job/" + n.sandbox_job + "\n";
  s += k + "logs job/" + n.sandbox_job + "\n";
  return s;
}

// README.txt: the user's instructions, with this export's names filled in.
std::string k8s_readme(const ExportInput& in, const Names& n, const std::vector<std::string>& empty_dirs) {
  const std::string k = "kubectl -n " + n.ns + " ";
  const std::string wait_s = std::to_string(in.policy.timeout_seconds + 60);
  const std::string plan_wait_s = std::to_string(in.planner.timeout_seconds + 60);
  std::string r;
  r += "lazyagent-oci Kubernetes export '" + n.run + "' (namespace " + n.ns + ")\n\n";
  r += "Files (apply in this order; kubectl apply -f DIR does):\n"
       "  10-seed-configmap.yaml         ConfigMap " + n.seed_cm + ": the seed" +
       std::string(in.patched() ? " with the patch applied" : " (no patch)") + ", one key per file\n"
       "  20-task-configmap.yaml         ConfigMap " + n.task_cm + ": the planner's task.json\n"
       "  30-sandbox-networkpolicy.yaml  NetworkPolicy " + n.netpol + ": no traffic in or out of the sandbox\n"
       "  40-planner-job.yaml            Job " + n.planner_job + ": asks the model for a patch (uses Secret " + n.secret + ")\n"
       "  50-sandbox-job.yaml            Job " + n.sandbox_job + ": runs the tests on /seed; no secret, no token;\n"
       "                                 network: the deny-all NetworkPolicy, which only a CNI plugin that\n"
       "                                 enforces NetworkPolicy makes real (see \"Not enforced\")\n\n";
  r += "1. Images. The nodes must be able to run " + in.policy.image + " and " + in.planner.image +
       "\n   (imagePullPolicy IfNotPresent): push them to a registry the nodes reach and change\n"
       "   `image:`, or load them into each node's runtime.\n\n";
  r += "2. Namespace and the provider Secret. The Secret is yours and never in these files; the\n"
       "   planner reads three keys, as files under /run/secrets: base_url (the OpenAI-compatible\n"
       "   endpoint, e.g. https://provider.example/v1), model, api_key.\n\n";
  if (n.ns != "default") r += "   kubectl create namespace " + n.ns + "\n";
  r += "   read -rsp 'Provider API key: ' KEY && echo\n"
       "   printf '%s' \"$KEY\" | " + k + "create secret generic " + n.secret + " \\\n"
       "     --from-literal=base_url=https://provider.example/v1 --from-literal=model=MODEL \\\n"
       "     --from-file=api_key=/dev/stdin; unset KEY\n\n";
  r += "   Optional, Kubernetes >= 1.23: have the namespace enforce what the pods already meet:\n"
       "   kubectl label namespace " + n.ns + " pod-security.kubernetes.io/enforce=restricted\n\n";
  r += "3. Apply (from this directory):  kubectl apply -f .\n"
       "   Only the sandbox (prove this export's seed" + std::string(in.patched() ? " + patch" : "") + ", no model):\n"
       "   kubectl apply -f 10-seed-configmap.yaml -f 30-sandbox-networkpolicy.yaml -f 50-sandbox-job.yaml\n\n";
  r += "4. The planner's patch. Its stdout is the patch (one JSON line); its log lines start with\n"
       "   'planner:' and 'planner-summary:' (kubectl logs mixes both streams):\n"
       "   " + k + "wait --for=condition=complete --timeout=" + plan_wait_s + "s job/" + n.planner_job + "\n"
       "   " + k + "logs job/" + n.planner_job + " | grep '^{' > patch.json\n"
       "   To prove it on the cluster, export again with that patch and apply the sandbox Job.\n\n";
  r += "5. The sandbox's verdict. The Job completes when the test command exits 0 and fails on a\n"
       "   non-zero exit (a memory kill is 137) or at its deadline (" + std::to_string(in.policy.timeout_seconds) +
       " s): then the reason is\n   DeadlineExceeded and the pod, with its log, is already deleted.\n"
       "   Wait for either (kubectl wait takes one condition; the first form waits the full\n"
       "   timeout when the Job fails):\n"
       "   " + k + "wait --for=condition=complete --timeout=" + wait_s + "s job/" + n.sandbox_job + " \\\n"
       "     || " + k + "wait --for=condition=failed --timeout=5s job/" + n.sandbox_job + "\n"
       "   until " + k + "get job " + n.sandbox_job + " -o jsonpath='{.status.conditions[*].type}' \\\n"
       "     | grep -qE 'Complete|Failed'; do sleep 2; done\n"
       "   Then:\n"
       "   " + k + "get job " + n.sandbox_job +
       " -o jsonpath='{.status.conditions[*].type} {.status.conditions[*].reason}{\"\\n\"}'\n"
       "   " + k + "logs job/" + n.sandbox_job + "\n"
       "   " + k + "get pods -l job-name=" + n.sandbox_job +
       " -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}{\"\\n\"}'\n"
       "   As with `lazyagent-oci test`, the tests passed only when the exit code is 0 AND the\n"
       "   log ends with a test runner's report of at least one test run and none failed.\n\n";
  r += "6. Clean up (the Jobs also delete themselves " + std::to_string(kK8sTtlSecondsAfterFinished) +
       " s after finishing, where the TTL controller runs):\n"
       "   " + k + "delete job,configmap,networkpolicy -l " + kLabelRun + "=" + n.run + "\n"
       "   " + k + "delete secret " + n.secret + "\n";
  if (n.ns != "default") r += "   kubectl delete namespace " + n.ns + "    # if you created it for this\n";
  r += "\nBelow: what these manifests enforce, and what the podman sandbox enforces that they cannot.\n"
       "Details: docs/k8s.md in lazyagent-oci.\n";
  if (!empty_dirs.empty()) {
    r += "\nEmpty directories of the seed are not carried (a ConfigMap holds files only):";
    for (const auto& d : empty_dirs) r += " " + d;
    r += "\n";
  }
  return r;
}

}  // namespace

Result<K8sDocuments> k8s_documents(const ExportInput& in) {
  auto names = names_for(in);
  if (!names) return names.error().context("kubernetes export");
  const Names& n = *names;

  K8sDocuments d;
  FileConfigMap seed_cm;
  if (in.k8s_seed_image.empty()) {
    auto files = in.writes ? seed_files(in.seed, *in.writes, &d.empty_dirs) : seed_files(in.seed, in.patch, &d.empty_dirs);
    if (!files) return files.error().context("kubernetes export: seed ConfigMap");
    auto cm = files_configmap(metadata(n.seed_cm, n, "sandbox"), *files);
    if (!cm) return cm.error().context("kubernetes export: seed ConfigMap");
    seed_cm = std::move(*cm);
  }
  auto task_cm = task_configmap(in, n);
  if (!task_cm) return task_cm.error().context("kubernetes export");
  d.seed_configmap = seed_cm.manifest;  // null with a seed image
  d.task_configmap = *task_cm;
  d.network_policy = network_policy(n);
  d.planner_job = planner_job(in, n);
  d.sandbox_job = sandbox_job(in, n, seed_cm.items);
  ExportBundle lines;
  policy_lines(in, n, lines);
  d.enforced = std::move(lines.enforced);
  d.not_enforced = std::move(lines.not_enforced);
  return d;
}

Result<ExportBundle> export_k8s(const ExportInput& in) {
  auto names = names_for(in);
  if (!names) return names.error().context("kubernetes export");
  const Names& n = *names;
  auto d = k8s_documents(in);
  if (!d) return d.error();

  const std::pair<const char*, ordered_json> docs[] = {
      {"10-seed-configmap.yaml", d->seed_configmap},
      {"20-task-configmap.yaml", d->task_configmap},
      {"30-sandbox-networkpolicy.yaml", d->network_policy},
      {"40-planner-job.yaml", d->planner_job},
      {"50-sandbox-job.yaml", d->sandbox_job},
  };
  ExportBundle bundle;
  for (const auto& [path, doc] : docs) {
    auto text = to_yaml(doc);
    if (!text) return text.error().context(std::string("kubernetes export: ") + path);
    bundle.files.push_back({path, *text, 0644});
  }
  bundle.enforced = d->enforced;
  bundle.not_enforced = d->not_enforced;
  std::string text = k8s_readme(in, n, d->empty_dirs) + "\nEnforced:\n";
  for (const auto& l : bundle.enforced) text += "  - " + l + "\n";
  text += "\nNot enforced:\n";
  for (const auto& l : bundle.not_enforced) text += "  - " + l + "\n";
  bundle.files.push_back({"README.txt", text, 0644});
  bundle.how_to_run = how_to_run(n);
  return bundle;
}

}  // namespace lazyagent
