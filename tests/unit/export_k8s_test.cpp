// The Kubernetes export, read back the way a user's kubectl would: every
// manifest is parsed with yaml-cpp and checked field by field.
#include "catch_compat.h"
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "export/export_k8s.h"
#include "export/export_k8s_configmap.h"
#include "contract/planner_task.h"
#include "util/yaml_text.h"

using namespace lazyagent;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const std::string kBinary("\x00\x01\xff\xfe\x80 binary\n", 14);
const std::string kPatched = "def add(a, b):\n    return a + b\n";

SeedSnapshot test_seed() {
  SeedSnapshot s;
  s.root = "/home/user/project";
  s.sha256 = "5eed";
  using K = SeedEntry::Kind;
  s.entries = {
      {"README.md", K::kFile, 0644, "# demo\n"},
      {"calculator.py", K::kFile, 0644, "def add(a, b):\n    return a - b\n"},
      {"crlf.txt", K::kFile, 0644, "dos\r\nline  \r\n"},
      {"data.bin", K::kFile, 0644, kBinary},
      {"empty", K::kDir, 0755, ""},
      {"noeol.txt", K::kFile, 0644, "no newline at the end"},
      {"pkg", K::kDir, 0755, ""},
      {"pkg/__init__.py", K::kFile, 0644, ""},
      {"pkg/sub", K::kDir, 0755, ""},
      {"pkg/sub/run.sh", K::kFile, 0755, "#!/bin/sh\necho \"$HOME\" $(id -u)\n"},
      {"pkg/sub/unicode.txt", K::kFile, 0644, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\ttab\n"},
      {"test_calculator.py", K::kFile, 0644, "import unittest\n"},
  };
  return s;
}

ExportInput test_input() {
  ExportInput in;
  in.config.test_command = "python3 -m unittest -v";
  in.policy = policy_from_config(in.config, 120);
  in.planner = planner_request_from_config(in.config);
  in.seed = test_seed();
  Patch p;
  p.files = {{"calculator.py", kPatched}, {"pkg/new.py", "X = 1\n"}};
  in.patch = p;
  in.name = "lz";
  in.k8s_namespace = "lz-ns";
  return in;
}

struct Exported {
  ExportBundle bundle;
  std::map<std::string, std::string> text;  // path -> content
  YAML::Node doc(const std::string& path) const { return YAML::Load(text.at(path)); }
};

Exported exported(const ExportInput& in = test_input()) {
  auto r = export_k8s(in);
  INFO((r ? "" : r.error().message));
  REQUIRE(r.ok());
  Exported e{*r, {}};
  for (const auto& f : r->files) e.text[f.path] = f.content;
  return e;
}

std::set<std::string> keys(const YAML::Node& map) {
  std::set<std::string> out;
  for (const auto& kv : map) out.insert(kv.first.as<std::string>());
  return out;
}

std::vector<std::string> strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  for (const auto& v : seq) out.push_back(v.as<std::string>());
  return out;
}

std::string base64_decode(const std::string& s) {
  static const std::string abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    buf = (buf << 6) | static_cast<unsigned>(abc.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

// What Kubernetes hands the process for a command word: $$ -> $.
std::string kubelet_expand(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '$') ++i;
  }
  return out;
}

// Walks a node; collects every map key anywhere below it.
void all_keys(const YAML::Node& n, std::set<std::string>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      out.insert(kv.first.as<std::string>());
      all_keys(kv.second, out);
    }
  } else if (n.IsSequence()) {
    for (const auto& v : n) all_keys(v, out);
  }
}

}  // namespace

TEST_CASE("k8s: the files of the bundle, in apply order") {
  const Exported e = exported();
  std::vector<std::string> paths;
  for (const auto& f : e.bundle.files) paths.push_back(f.path);
  CHECK(paths == std::vector<std::string>{"10-seed-configmap.yaml", "20-task-configmap.yaml",
                                          "30-sandbox-networkpolicy.yaml", "40-planner-job.yaml",
                                          "50-sandbox-job.yaml", "README.txt"});
  CHECK(e.doc("10-seed-configmap.yaml")["kind"].as<std::string>() == "ConfigMap");
  CHECK(e.doc("30-sandbox-networkpolicy.yaml")["kind"].as<std::string>() == "NetworkPolicy");
  for (const auto& f : e.bundle.files) CHECK(f.content.find("kind: Secret") == std::string::npos);
}

TEST_CASE("k8s: every security field of the sandbox Job, exactly") {
  const YAML::Node job = exported().doc("50-sandbox-job.yaml");
  CHECK(job["apiVersion"].as<std::string>() == "batch/v1");
  CHECK(job["kind"].as<std::string>() == "Job");
  CHECK(job["metadata"]["name"].as<std::string>() == "lz-sandbox");
  CHECK(job["metadata"]["namespace"].as<std::string>() == "lz-ns");
  CHECK(job["metadata"]["annotations"]["io.lazyagent.seed-sha256"].as<std::string>() == "5eed");
  const YAML::Node spec = job["spec"];
  CHECK(keys(spec) == std::set<std::string>{"backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "template"});
  CHECK(spec["backoffLimit"].as<int>() == 0);
  CHECK(spec["activeDeadlineSeconds"].as<int>() == 120);
  CHECK(spec["ttlSecondsAfterFinished"].as<int>() == 3600);
  const YAML::Node labels = spec["template"]["metadata"]["labels"];
  CHECK(keys(labels) == std::set<std::string>{"io.lazyagent.role", "io.lazyagent.run"});
  CHECK(labels["io.lazyagent.role"].as<std::string>() == "sandbox");
  CHECK(labels["io.lazyagent.run"].as<std::string>() == "lz");

  const YAML::Node pod = spec["template"]["spec"];
  CHECK(keys(pod) == std::set<std::string>{"restartPolicy", "automountServiceAccountToken", "enableServiceLinks",
                                           "hostname", "dnsPolicy", "dnsConfig", "terminationGracePeriodSeconds",
                                           "securityContext", "containers", "volumes"});
  CHECK(pod["restartPolicy"].as<std::string>() == "Never");
  CHECK(pod["automountServiceAccountToken"].as<bool>() == false);
  CHECK(pod["enableServiceLinks"].as<bool>() == false);
  CHECK(pod["dnsPolicy"].as<std::string>() == "None");
  CHECK(strings(pod["dnsConfig"]["nameservers"]) == std::vector<std::string>{"127.0.0.1"});
  const YAML::Node psc = pod["securityContext"];
  CHECK(keys(psc) == std::set<std::string>{"runAsNonRoot", "runAsUser", "runAsGroup", "fsGroup", "seccompProfile"});
  CHECK(psc["runAsNonRoot"].as<bool>() == true);
  CHECK(psc["runAsUser"].as<int>() == 1000);
  CHECK(psc["runAsGroup"].as<int>() == 1000);
  CHECK(psc["fsGroup"].as<int>() == 1000);
  CHECK(keys(psc["seccompProfile"]) == std::set<std::string>{"type"});
  CHECK(psc["seccompProfile"]["type"].as<std::string>() == "RuntimeDefault");

  REQUIRE(pod["containers"].size() == 1);
  const YAML::Node c = pod["containers"][0];
  CHECK(c["image"].as<std::string>() == "localhost/lazyagent-sandbox:latest");
  const YAML::Node csc = c["securityContext"];
  CHECK(keys(csc) == std::set<std::string>{"allowPrivilegeEscalation", "privileged", "readOnlyRootFilesystem", "capabilities"});
  CHECK(csc["allowPrivilegeEscalation"].as<bool>() == false);
  CHECK(csc["privileged"].as<bool>() == false);
  CHECK(csc["readOnlyRootFilesystem"].as<bool>() == true);
  CHECK(keys(csc["capabilities"]) == std::set<std::string>{"drop"});
  CHECK(strings(csc["capabilities"]["drop"]) == std::vector<std::string>{"ALL"});
  CHECK(c["resources"]["limits"]["cpu"].as<std::string>() == "1");
  CHECK(c["resources"]["limits"]["memory"].as<std::string>() == "512Mi");
  CHECK(c["resources"]["requests"]["cpu"].as<std::string>() == "1");
  CHECK(c["resources"]["requests"]["memory"].as<std::string>() == "512Mi");

  REQUIRE(c["volumeMounts"].size() == 3);
  CHECK(c["volumeMounts"][0]["name"].as<std::string>() == "seed");
  CHECK(c["volumeMounts"][0]["mountPath"].as<std::string>() == "/seed");
  CHECK(c["volumeMounts"][0]["readOnly"].as<bool>() == true);
  CHECK(c["volumeMounts"][1]["mountPath"].as<std::string>() == "/work");
  CHECK(c["volumeMounts"][2]["mountPath"].as<std::string>() == "/tmp");
  const YAML::Node vols = pod["volumes"];
  REQUIRE(vols.size() == 3);
  CHECK(keys(vols[0]) == std::set<std::string>{"name", "configMap"});
  CHECK(vols[0]["configMap"]["name"].as<std::string>() == "lz-seed");
  CHECK(vols[0]["configMap"]["defaultMode"].as<int>() == 0644);
  for (int i : {1, 2}) {
    CHECK(keys(vols[i]) == std::set<std::string>{"name", "emptyDir"});
    CHECK(vols[i]["emptyDir"]["medium"].as<std::string>() == "Memory");
    CHECK(vols[i]["emptyDir"]["sizeLimit"].as<std::string>() == "64Mi");
  }
}

TEST_CASE("k8s: the sandbox's environment and command are the policy's, exactly") {
  const ExportInput in = test_input();
  const YAML::Node c = exported(in).doc("50-sandbox-job.yaml")["spec"]["template"]["spec"]["containers"][0];
  std::map<std::string, std::string> env;
  for (const auto& v : c["env"]) {
    CHECK(keys(v) == std::set<std::string>{"name", "value"});  // no valueFrom of any kind
    env[v["name"].as<std::string>()] = v["value"].as<std::string>();
  }
  CHECK(env == in.policy.env);
  const std::vector<std::string> cmd = strings(c["command"]);
  std::vector<std::string> want = {"/usr/bin/env", "-i", "HOME=/work", "LANG=C.UTF-8",
                                   "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                   "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "TMPDIR=/work/.lazyagent-tmp"};
  // On Kubernetes the egress probe runs always (the last word), even where
  // the pod shows only lo: the isolation modes rest on it there.
  for (const auto& a : sandbox_command("python3 -m unittest -v", 1 << 20, "", EgressProbe::kAlways)) want.push_back(a);
  CHECK(want.back() == "always");
  std::vector<std::string> expanded;
  for (const auto& a : cmd) expanded.push_back(kubelet_expand(a));
  CHECK(expanded == want);
}

TEST_CASE("k8s: every '$' in the command is escaped from the kubelet's $(VAR) expansion") {
  ExportInput in = test_input();
  in.config.test_command = "echo $(HOME) $$ ${X}";
  const YAML::Node c = exported(in).doc("50-sandbox-job.yaml")["spec"]["template"]["spec"]["containers"][0];
  const std::vector<std::string> cmd = strings(c["command"]);
  CHECK(std::find(cmd.begin(), cmd.end(), "echo $$(HOME) $$$$ $${X}") != cmd.end());
  CHECK(cmd[8] == "/bin/sh");  // after env -i and the 6 variables
  for (std::string a : cmd) {
    for (auto p = a.find("$$"); p != std::string::npos; p = a.find("$$")) a.erase(p, 2);
    CHECK(a.find('$') == std::string::npos);
  }
}

TEST_CASE("k8s: no secret of any kind reaches the sandbox") {
  const Exported e = exported();
  const std::string& text = e.text.at("50-sandbox-job.yaml");
  std::set<std::string> k;
  all_keys(e.doc("50-sandbox-job.yaml"), k);
  for (const char* forbidden : {"secret", "secretName", "secretKeyRef", "secretRef", "envFrom", "valueFrom",
                                "projected", "serviceAccountName", "hostPath", "hostNetwork", "hostPID", "hostIPC",
                                "initContainers", "imagePullSecrets"}) {
    INFO(forbidden);
    CHECK(k.count(forbidden) == 0);
  }
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  CHECK(lower.find("secret") == std::string::npos);
  CHECK(text.find("lz-provider") == std::string::npos);
  CHECK(text.find("/home/user/project") == std::string::npos);  // no host path of the user's
}

TEST_CASE("k8s: the planner gets the user's Secret by name, as files, and nothing else of it") {
  const Exported e = exported();
  const YAML::Node job = e.doc("40-planner-job.yaml");
  CHECK(job["metadata"]["name"].as<std::string>() == "lz-planner");
  CHECK(job["spec"]["activeDeadlineSeconds"].as<int>() == 600);
  CHECK(job["spec"]["backoffLimit"].as<int>() == 0);
  const YAML::Node pod = job["spec"]["template"]["spec"];
  CHECK(pod["automountServiceAccountToken"].as<bool>() == false);
  CHECK(pod["securityContext"]["runAsNonRoot"].as<bool>() == true);
  CHECK(pod["securityContext"]["runAsUser"].as<int>() == 65534);
  CHECK(pod["securityContext"]["fsGroup"].as<int>() == 65534);
  const YAML::Node c = pod["containers"][0];
  CHECK(strings(c["command"]) == std::vector<std::string>{"/usr/local/bin/lazyagent-oci"});
  CHECK(strings(c["args"]) ==
        std::vector<std::string>{"plan", "--task", "/task/task.json", "--secrets-dir", "/run/secrets"});
  CHECK(c["securityContext"]["readOnlyRootFilesystem"].as<bool>() == true);
  CHECK(strings(c["securityContext"]["capabilities"]["drop"]) == std::vector<std::string>{"ALL"});
  for (const auto& v : c["env"]) CHECK(keys(v) == std::set<std::string>{"name", "value"});
  bool secret_mount = false;
  for (const auto& m : c["volumeMounts"]) {
    if (m["name"].as<std::string>() != "provider") continue;
    secret_mount = true;
    CHECK(m["mountPath"].as<std::string>() == "/run/secrets");
    CHECK(m["readOnly"].as<bool>() == true);
  }
  CHECK(secret_mount);
  const YAML::Node secret = pod["volumes"][1]["secret"];
  CHECK(keys(secret) == std::set<std::string>{"secretName", "items", "defaultMode"});
  CHECK(secret["secretName"].as<std::string>() == "lz-provider");
  CHECK(secret["defaultMode"].as<int>() == 0440);
  std::vector<std::string> items;
  for (const auto& i : secret["items"]) {
    CHECK(i["key"].as<std::string>() == i["path"].as<std::string>());
    items.push_back(i["key"].as<std::string>());
  }
  CHECK(items == std::vector<std::string>{"base_url", "model", "api_key"});
  CHECK(pod["volumes"][0]["configMap"]["name"].as<std::string>() == "lz-task");
}

TEST_CASE("k8s: the NetworkPolicy selects exactly the sandbox pods and allows nothing") {
  const Exported e = exported();
  const YAML::Node np = e.doc("30-sandbox-networkpolicy.yaml");
  CHECK(np["apiVersion"].as<std::string>() == "networking.k8s.io/v1");
  CHECK(np["metadata"]["name"].as<std::string>() == "lz-sandbox-deny-all");
  CHECK(np["metadata"]["namespace"].as<std::string>() == "lz-ns");
  CHECK(keys(np["spec"]) == std::set<std::string>{"podSelector", "policyTypes"});  // no ingress/egress rules
  CHECK(strings(np["spec"]["policyTypes"]) == std::vector<std::string>{"Ingress", "Egress"});
  const YAML::Node sel = np["spec"]["podSelector"];
  CHECK(keys(sel) == std::set<std::string>{"matchLabels"});
  const YAML::Node sandbox = e.doc("50-sandbox-job.yaml")["spec"]["template"]["metadata"]["labels"];
  const YAML::Node planner = e.doc("40-planner-job.yaml")["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : sel["matchLabels"]) {
    const std::string k = kv.first.as<std::string>();
    CHECK(sandbox[k].as<std::string>() == kv.second.as<std::string>());
  }
  CHECK(planner["io.lazyagent.role"].as<std::string>() != sel["matchLabels"]["io.lazyagent.role"].as<std::string>());
}

TEST_CASE("k8s: the seed ConfigMap round-trips every file, nested, binary and patched") {
  const Exported e = exported();
  const YAML::Node cm = e.doc("10-seed-configmap.yaml");
  const YAML::Node items = e.doc("50-sandbox-job.yaml")["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"];
  std::map<std::string, std::pair<std::string, int>> got;  // path -> content, mode
  std::set<std::string> seen_keys;
  for (const auto& i : items) {
    const std::string key = i["key"].as<std::string>();
    CHECK(key.find('/') == std::string::npos);
    CHECK(seen_keys.insert(key).second);
    const std::string content = cm["data"][key] ? cm["data"][key].as<std::string>()
                                                : base64_decode(cm["binaryData"][key].as<std::string>());
    got[i["path"].as<std::string>()] = {content, i["mode"] ? i["mode"].as<int>() : 0644};
  }
  std::map<std::string, std::pair<std::string, int>> want;
  for (const auto& en : test_seed().entries) {
    if (en.kind == SeedEntry::Kind::kFile) want[en.path] = {en.data, static_cast<int>(en.mode)};
  }
  want["calculator.py"] = {kPatched, 0644};
  want["pkg/new.py"] = {"X = 1\n", 0644};
  CHECK(got == want);
  CHECK(keys(cm["binaryData"]).size() == 1);  // data.bin only: CRLF, tabs, emoji stay readable text
  CHECK(got["pkg/sub/run.sh"].second == 0755);
  CHECK(e.text.at("10-seed-configmap.yaml").find("  f0001: |\n    def add(a, b):\n        return a + b\n") !=
        std::string::npos);
  CHECK(e.text.at("README.txt").find("Empty directories of the seed are not carried (a ConfigMap holds files only): empty\n") !=
        std::string::npos);
}

TEST_CASE("k8s: the task ConfigMap holds the planner's task.json") {
  const ExportInput in = test_input();
  const YAML::Node cm = exported(in).doc("20-task-configmap.yaml");
  CHECK(cm["metadata"]["name"].as<std::string>() == "lz-task");
  const json task = json::parse(cm["data"]["task.json"].as<std::string>());
  CHECK(task == task_to_json(build_task(in.seed, in.config, in.instruction, "lz")));
}

TEST_CASE("k8s: what the target enforces and cannot, one line each") {
  const ExportBundle b = exported().bundle;
  auto has = [](const std::vector<std::string>& lines, const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  CHECK(has(b.not_enforced, "pids: a Pod spec has no pids limit (podman: 256); only the kubelet's node-level "
                            "podPidsLimit applies, if set"));
  CHECK(has(b.not_enforced, "rlimits: nofile 1024 / nproc 256 cannot be set per pod; the container runtime's "
                            "defaults apply"));
  CHECK(has(b.not_enforced, "mount options: /work and /tmp are not nosuid,nodev and /tmp is not noexec "
                            "(podman's are); an emptyDir takes no mount options"));
  auto starts = [](const std::vector<std::string>& lines, const std::string& prefix) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
  };
  CHECK(starts(b.not_enforced, "network: the sandbox pod has an interface on the cluster network"));
  CHECK(starts(b.not_enforced, "output: capped at 1048576 bytes only by the sandbox script's own head/tail"));
  CHECK(starts(b.not_enforced, "planner network: egress is open"));
  CHECK(starts(b.enforced, "time: activeDeadlineSeconds 120 on the Job"));
  CHECK(starts(b.enforced, "no secrets in the sandbox:"));
  const std::string readme = exported().text.at("README.txt");
  for (const char* s : {"kubectl create namespace lz-ns\n", "create secret generic lz-provider",
                        "wait --for=condition=complete --timeout=180s job/lz-sandbox",
                        "wait --for=condition=failed --timeout=5s job/lz-sandbox",
                        "kubectl -n lz-ns logs job/lz-sandbox\n",
                        "{.items[0].status.containerStatuses[0].state.terminated.exitCode}",
                        "kubectl -n lz-ns delete job,configmap,networkpolicy -l io.lazyagent.run=lz\n",
                        "  - pids: a Pod spec has no pids limit"}) {
    INFO(s);
    CHECK(readme.find(s) != std::string::npos);
  }
  // The file list must not promise what "Not enforced" takes back: the pod
  // has an interface on the cluster network; only the NetworkPolicy (where a
  // CNI enforces it) stands between it and the network.
  const std::string job_line = readme.substr(readme.find("50-sandbox-job.yaml"), 300);
  CHECK(job_line.find("no network") == std::string::npos);
  CHECK(job_line.find("network: the deny-all NetworkPolicy, which only a CNI plugin that") != std::string::npos);
}

TEST_CASE("k8s: refusals name the problem") {
  ExportInput in = test_input();
  in.name = "Bad_Name";
  auto r = export_k8s(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kUsage);
  CHECK(r.error().message ==
        "kubernetes export: export name 'Bad_Name': Kubernetes names need 1-40 characters of a-z, 0-9 and '-', "
        "starting and ending with a letter or digit");

  in = test_input();
  in.seed.entries.push_back({"link", SeedEntry::Kind::kSymlink, 0777, "calculator.py"});
  r = export_k8s(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "kubernetes export: seed ConfigMap: the seed has symlinks, which a ConfigMap cannot carry: link");

  in = test_input();
  in.seed.entries.push_back({"big", SeedEntry::Kind::kFile, 0644, std::string(kConfigMapMaxBytes, 'x')});
  r = export_k8s(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("kubernetes export: seed ConfigMap: the seed is ") == 0);
  CHECK(r.error().message.find("more than a ConfigMap holds (1048576 bytes in total)") != std::string::npos);

  in = test_input();
  in.patch->files = {{"pkg", "x"}};
  r = export_k8s(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kPatch);
  CHECK(r.error().message == "kubernetes export: seed ConfigMap: the patch does not fit the seed: replaces_directory (pkg)");

  in = test_input();
  in.config.test_command = std::string("echo \x7f");
  r = export_k8s(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "kubernetes export: 50-sandbox-job.yaml: manifest value spec.template.spec.containers[0]"
                             ".command[12] contains DEL (U+007F), which YAML cannot carry");
}

TEST_CASE("k8s YAML: every string reads back exactly as written") {
  const std::vector<std::string> values = {
      "", "1000", "0644", "1e3", "0x1F", "true", "Yes", "off", "null", "~", "- x", "a: b", "#c", "*alias", "&a",
      "!tag", "{x}", "[x]", "%x", "@x", "`x", "'q'", "\"q\"", " lead", "trail ", "multi\nline", "multi\nline\n",
      "two\n\n", "\nlead\n", "trail \nx\n", "tab\there\n", "\ttab\n", "cr\r\n", "caf\xc3\xa9\n", "\xe2\x80\xa8",
      "nul\x01", std::string("\0x", 2), "--- \n", "... \n", "key: |\n", "/seed", "io.lazyagent.role", "C.UTF-8"};
  for (const auto& v : values) {
    INFO(json(v).dump());
    auto text = to_yaml(ordered_json{{"v", v}, {v.empty() ? "empty" : v, 1}});
    REQUIRE(text.ok());
    const YAML::Node n = YAML::Load(*text);
    CHECK(n["v"].as<std::string>() == v);
    CHECK(n[v.empty() ? "empty" : v].as<int>() == 1);
  }
  CHECK(*to_yaml(ordered_json{{"a", "plain"}, {"b", "two\nlines\n"}}) == "a: plain\nb: |\n  two\n  lines\n");
  auto bad = to_yaml(ordered_json{{"x", {{"y", {"ok", "\xff"}}}}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "manifest value x.y[1] is not valid UTF-8");
}
