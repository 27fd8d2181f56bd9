// The Kubernetes export against real things (tag [k8s]):
//  1. a real kube-apiserver 1.20 (scripts/k8s-apiserver.sh: built once from
//     Debian's kubernetes source package, cached) takes the manifests with
//     server-side dry-run, and keeps every field we sent;
//  2. podman kube play runs the sandbox Job's pod with the seed ConfigMap, and
//     its verdict is the one `lazyagent-oci test` gives for the same patch.
// Without the cached apiserver the first test FAILS, telling what to run.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config.h"
#include "export/export_k8s.h"
#include "harness.h"
#include "contract/verdict.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

struct Shell {
  int code = -1;
  std::string out;  // stdout and stderr
};

Shell run(const std::string& command) {
  Shell r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const std::string kScript = std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-apiserver.sh";

std::string kubectl_bin() {
  const char* cache = std::getenv("LAZYAGENT_CACHE_DIR");
  return std::string(cache ? cache : "/var/cache/lazyagent-oci") + "/k8s-cluster/bin/kubectl";  // k8s-cluster.sh build
}

// etcd + kube-apiserver for one test, in a private state directory; stopped
// (processes killed, directory removed) when the test ends, pass or fail.
class ApiServer {
 public:
  explicit ApiServer(const std::string& state) : env_("LAZYAGENT_K8S_STATE=" + quoted(state) + " ") {
    const Shell s = run("(" + env_ + quoted(kScript) + " start 2>" + quoted(state + ".log") + ")");
    started_ = s.code == 0;
    kubeconfig_ = s.out.substr(0, s.out.find('\n'));
    std::ifstream f(state + ".log");
    log_.assign(std::istreambuf_iterator<char>(f), {});
  }
  ~ApiServer() { run(env_ + quoted(kScript) + " stop"); }
  bool started() const { return started_; }
  const std::string& log() const { return log_; }
  Shell kubectl(const std::string& args) const {
    return run(quoted(kubectl_bin()) + " --kubeconfig " + quoted(kubeconfig_) + " " + args);
  }

 private:
  std::string env_, kubeconfig_, log_;
  bool started_ = false;
};

// A seed with what the ConfigMap must carry exactly: the demo files plus a
// nested directory, a binary file, CRLF, tabs and non-ASCII text.
std::string rich_seed(const TempDir& dir) {
  const std::string seed = dir.path() + "/seed";
  fs::copy(seed_dir(), seed, fs::copy_options::recursive);
  dir.file("seed/pkg/sub/data.bin", std::string("\x00\x01\xfe\xff\x80 bin", 10));
  dir.file("seed/pkg/notes.txt", "tab\there\r\ncaf\xc3\xa9 \xe2\x9c\x93\n");
  return seed;
}

lazyagent::ExportInput export_input(const std::string& seed, const std::string& patch_text, const std::string& name,
                                    const std::string& ns) {
  auto config = lazyagent::load_config_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  REQUIRE(config.ok());
  auto snap = lazyagent::snapshot_seed_source(seed, lazyagent::SeedConfig{});
  REQUIRE(snap.ok());
  lazyagent::ContractLimits limits;
  limits.allow = config->allow;
  auto patch = lazyagent::validate_patch_json(patch_text, limits);
  REQUIRE(patch.ok());
  lazyagent::ExportInput in;
  in.config = *config;
  in.policy = lazyagent::policy_from_config(in.config, in.config.timeouts.test_seconds);
  in.planner = lazyagent::planner_request_from_config(in.config);
  in.seed = *snap;
  in.patch = patch.patch;
  in.name = name;
  in.k8s_namespace = ns;
  return in;
}

std::map<std::string, std::string> write_bundle(const lazyagent::ExportInput& in, const std::string& dir) {
  auto bundle = lazyagent::export_k8s(in);
  INFO((bundle ? "" : bundle.error().message));
  REQUIRE(bundle.ok());
  fs::create_directories(dir);
  std::map<std::string, std::string> files;
  for (const auto& f : bundle->files) {
    std::ofstream(dir + "/" + f.path, std::ios::binary) << f.content;
    files[f.path] = f.content;
  }
  return files;
}

// Every field we sent is in what the server returns, with the same value
// (the server may add defaults). Scalars compare as text: yaml-cpp reads
// everything as strings.
void sent_is_kept(const YAML::Node& sent, const json& got, const std::string& at, std::vector<std::string>& lost) {
  if (sent.IsMap()) {
    for (const auto& kv : sent) {
      const std::string k = kv.first.as<std::string>();
      if (!got.is_object() || !got.contains(k)) {
        lost.push_back(at + "." + k + " (dropped)");
        continue;
      }
      sent_is_kept(kv.second, got[k], at + "." + k, lost);
    }
  } else if (sent.IsSequence()) {
    if (!got.is_array() || got.size() != sent.size()) {
      lost.push_back(at + " (list changed)");
      return;
    }
    for (std::size_t i = 0; i < sent.size(); ++i) sent_is_kept(sent[i], got[i], at + "[" + std::to_string(i) + "]", lost);
  } else {
    const std::string want = sent.as<std::string>();
    const std::string have = got.is_string() ? got.get<std::string>() : got.dump();
    if (want != have) lost.push_back(at + ": sent " + json(want).dump() + ", got " + json(have).dump());
  }
}

}  // namespace

TEST_CASE("a real kube-apiserver 1.20 accepts the k8s export (server-side dry-run) and keeps every field",
          "[k8s]") {
  TempDir dir;
  const std::string ns = "lazyagent-it";
  const auto in = export_input(rich_seed(dir), fixing_patch(), "dryrun", ns);
  const auto files = write_bundle(in, dir.path() + "/out");

  ApiServer api(dir.path() + "/k8s");
  if (!api.started()) {
    FAIL("could not start the local kube-apiserver. If it is not built, run (once, a few minutes):\n"
         "  scripts/k8s-apiserver.sh build\n"
         "scripts/k8s-apiserver.sh start said:\n" + api.log());
  }
  REQUIRE(api.kubectl("create namespace " + ns).code == 0);

  const Shell dry = api.kubectl("apply --dry-run=server -o json -f " + quoted(dir.path() + "/out"));
  INFO(dry.out);
  REQUIRE(dry.code == 0);
  // kubectl prints a List for several objects; a warning line may come first.
  const json list = json::parse(dry.out.substr(dry.out.find('{')));
  const json items = list.contains("items") ? list["items"] : json::array({list});
  REQUIRE(items.size() == 5);
  std::map<std::string, json> by_name;
  for (const auto& o : items) by_name[o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>()] = o;
  const std::pair<const char*, const char*> expected[] = {
      {"ConfigMap/dryrun-seed", "10-seed-configmap.yaml"}, {"ConfigMap/dryrun-task", "20-task-configmap.yaml"},
      {"NetworkPolicy/dryrun-sandbox-deny-all", "30-sandbox-networkpolicy.yaml"},
      {"Job/dryrun-planner", "40-planner-job.yaml"}, {"Job/dryrun-sandbox", "50-sandbox-job.yaml"}};
  for (const auto& [object, file] : expected) {
    INFO(object);
    REQUIRE(by_name.count(object) == 1);
    std::vector<std::string> lost;
    sent_is_kept(YAML::Load(files.at(file)), by_name[object], "", lost);
    CHECK(lost.empty());
    for (const auto& l : lost) UNSCOPED_INFO(l);
  }
  // go-yaml (kubectl) read the ConfigMap exactly as written.
  const json& cm = by_name["ConfigMap/dryrun-seed"];
  CHECK(cm["binaryData"].size() == 1);
  bool notes = false;
  for (const auto& [k, v] : cm["data"].items()) notes |= v == "tab\there\r\ncaf\xc3\xa9 \xe2\x9c\x93\n";
  CHECK(notes);
  // The alpha TTLAfterFinished gate is on (scripts/k8s-apiserver.sh): else 1.20 drops the field silently.
  CHECK(by_name["Job/dryrun-sandbox"]["spec"]["ttlSecondsAfterFinished"] == 3600);

  // The dry-run is a real check: a misspelled field and an invalid key are refused.
  {
    std::string job = files.at("50-sandbox-job.yaml");
    job.replace(job.find("runAsNonRoot"), 12, "runAsNonroot");
    const Shell typo = api.kubectl("apply --dry-run=server -f " + quoted(dir.file("typo/job.yaml", job)));
    CHECK(typo.code != 0);
    CHECK(typo.out.find("unknown field \"runAsNonroot\"") != std::string::npos);
    const std::string bad_cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: " + ns +
                               "}\ndata: {\"a/b\": x}\n";
    const Shell key = api.kubectl("apply --dry-run=server -f " + quoted(dir.file("bad/cm.yaml", bad_cm)));
    CHECK(key.code != 0);
    CHECK(key.out.find("a valid config key must consist of alphanumeric characters") != std::string::npos);
  }
}

namespace {

// podman 4.3.1 cannot run a Job, so the test runs the Job's pod template as a
// Pod, changed only where podman differs from a kubelet:
//  - no $(VAR) expansion in command: undo the export's $$ escaping as a
//    kubelet would ($$ -> $);
//  - an emptyDir becomes a *named, persistent* volume named after the
//    volume (on disk, no size limit): give each a unique name and remove it.
// The seed ConfigMap goes to `podman kube play --configmap`; podman makes it
// a volume named after the ConfigMap (flat item paths only: podman 4.3.1
// does not create the directories of nested item paths).
std::string pod_from_job(const std::string& job_yaml, const std::string& pod_name) {
  YAML::Node job = YAML::Load(job_yaml);
  YAML::Node spec = job["spec"]["template"]["spec"];
  for (std::size_t i = 0; i < spec["containers"][0]["command"].size(); ++i) {
    std::string word = spec["containers"][0]["command"][i].as<std::string>(), out;
    for (std::size_t j = 0; j < word.size(); ++j) {
      out += word[j];
      if (word[j] == '$' && j + 1 < word.size() && word[j + 1] == '$') ++j;
    }
    spec["containers"][0]["command"][i] = out;
  }
  for (auto v : spec["volumes"]) {
    if (v["emptyDir"]) v["name"] = pod_name + "-" + v["name"].as<std::string>();
  }
  for (auto m : spec["containers"][0]["volumeMounts"]) {
    if (m["name"].as<std::string>() != "seed") m["name"] = pod_name + "-" + m["name"].as<std::string>();
  }
  YAML::Node pod;
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"]["name"] = pod_name;
  pod["metadata"]["labels"] = job["spec"]["template"]["metadata"]["labels"];
  pod["spec"] = spec;
  YAML::Emitter e;
  e << pod;
  return e.c_str();
}

struct PodVerdict {
  int exit_code = -1;
  std::string output;
  std::string inspect;
};

PodVerdict play(const lazyagent::ExportInput& in, const TempDir& dir) {
  const auto files = write_bundle(in, dir.path() + "/" + in.name);
  const std::string pod = in.name;
  const std::string pod_file = dir.file(pod + "/pod.yaml", pod_from_job(files.at("50-sandbox-job.yaml"), pod));
  struct Cleanup {
    std::string pod, volumes;
    ~Cleanup() { run("podman pod rm -f " + pod + "; podman volume rm -f " + volumes); }
  } cleanup{pod, pod + "-seed " + pod + "-work " + pod + "-tmp"};

  const Shell up = run("podman kube play --network none --configmap " +
                       quoted(dir.path() + "/" + pod + "/10-seed-configmap.yaml") + " " + quoted(pod_file));
  if (up.out.find("catatonit") != std::string::npos) {
    FAIL("podman kube play needs catatonit for its pause image: apt-get install catatonit\n" + up.out);
  }
  INFO(up.out);
  REQUIRE(up.code == 0);
  const std::string ctr = pod + "-sandbox";
  const Shell waited = run("timeout 300 podman wait " + ctr);
  REQUIRE(waited.code == 0);
  PodVerdict v;
  v.exit_code = std::stoi(waited.out);
  v.output = run("podman logs " + ctr).out;
  v.inspect = run("podman inspect " + ctr +
                  " --format '{{.Config.User}} ro={{.HostConfig.ReadonlyRootfs}} mem={{.HostConfig.Memory}}"
                  " caps={{.EffectiveCaps}} net={{.HostConfig.NetworkMode}}'").out;
  return v;
}

}  // namespace

// podman kube play builds an infra ("pause") image on first use; the suite
// removes the ones it made so that it leaves no image tag behind.
std::string pause_images() {
  return run("podman images --noheading --filter reference=localhost/podman-pause --format '{{.ID}}' | sort").out;
}

TEST_CASE("podman kube play runs the sandbox Job's pod, and its verdict matches lazyagent-oci test", "[k8s]") {
  struct PauseImageCleanup {
    std::string before = pause_images();
    ~PauseImageCleanup() {
      if (before.empty()) run("podman rmi -f localhost/podman-pause 2>/dev/null; "
                              "podman images -q --filter reference=localhost/podman-pause | xargs -r podman rmi -f");
    }
  } pause_cleanup;
  const std::pair<std::string, bool> cases[] = {{fixing_patch(), true}, {wrong_patch(), false}};
  int i = 0;
  for (const auto& [patch, passes] : cases) {
    TempDir dir, state;
    const std::string name = "kp" + std::to_string(getpid()) + "-" + std::to_string(i++);
    const PodVerdict pod = play(export_input(seed_dir(), patch, name, "default"), dir);
    const lazyagent::Verdict verdict = lazyagent::judge({pod.exit_code, false, 0, false}, pod.output);
    INFO("pod output:\n" << pod.output << "\ninspect: " << pod.inspect);
    CHECK(pod.inspect.rfind("1000:1000 ro=true mem=536870912 caps=[] ", 0) == 0);

    const CliResult cli = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch",
                                                    dir.file("patch.json", patch), "--json"});
    const json result = json::parse(cli.out, nullptr, false);
    INFO("lazyagent-oci test: " << cli.out << cli.err);
    REQUIRE(result.is_object());
    CHECK(verdict.passed == passes);
    CHECK(result["tests_passed"] == verdict.passed);
    CHECK(result["test_exit_code"] == pod.exit_code);
    CHECK(pod.output.find("Ran 4 tests") != std::string::npos);
  }
}
