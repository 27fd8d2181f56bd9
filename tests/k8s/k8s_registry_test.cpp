// k8s.registry on the real local cluster and the real registry
// (scripts/k8s-registry.sh, started and stopped with scripts/k8s-cluster.sh):
// the run's private copy goes to the cluster as a seed image pulled by digest
// (src/engine/k8s/k8s_seed_image.h), never a ConfigMap or a host path.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "harness.h"
#include "k8s_registry_support.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/k8s_engine.h"
#include "engine/k8s/k8s_seed_image.h"
#include "engine/k8s/kubeconfig.h"
#include "engine/k8s/oci_registry.h"
#include "policy/sandbox_policy.h"
#include "util/digest.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;
using namespace k8sreg;

namespace {

std::vector<std::string> seed_tags() {
  RegistryClient r = registry();
  auto t = r.tags(kSeedImageRepo);
  REQUIRE(t.ok());
  return *t;
}

// The demo seed plus `files` generated files of `bytes` each under data/
// (random bytes: nothing compresses), a SUMS file the tests check, an
// executable script. Returns the seed's path.
std::string big_seed(const TempDir& dir, int files, int bytes) {
  const std::string seed = dir.path() + "/seed";
  const std::string out = sh("mkdir -p " + seed + " && cp " + seed_dir() + "/calculator.py " + seed_dir() +
                             "/test_calculator.py " + seed + "/ && python3 - " + seed + " " + std::to_string(files) +
                             " " + std::to_string(bytes) +
                             " <<'PY'\n"
                             "import hashlib, os, sys\n"
                             "root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
                             "sums = []\n"
                             "for i in range(n):\n"
                             "    d = os.path.join('data', 'd%03d' % (i // 100))\n"
                             "    os.makedirs(os.path.join(root, d), exist_ok=True)\n"
                             "    p = os.path.join(d, 'f%05d.bin' % i)\n"
                             "    b = os.urandom(size)\n"
                             "    open(os.path.join(root, p), 'wb').write(b)\n"
                             "    sums.append('%s  %s' % (hashlib.sha256(b).hexdigest(), p))\n"
                             "open(os.path.join(root, 'SUMS'), 'w').write('\\n'.join(sums) + '\\n')\n"
                             "t = os.path.join(root, 'tool.sh')\n"
                             "open(t, 'w').write('#!/bin/sh\\necho tool-ran\\n'); os.chmod(t, 0o755)\n"
                             "print('ok')\n"
                             "PY");
  REQUIRE(out == "ok\n");
  return seed;
}

std::string registry_config(const TempDir& dir, const std::string& seed, int files, int work_mib, int memory_mib) {
  const std::string check = "test \"$(find data -type f | wc -l)\" = " + std::to_string(files) +
                            " && sha256sum -c --quiet SUMS && test \"$(./tool.sh)\" = tool-ran && "
                            "python3 -m unittest -v";
  return dir.file("config.yaml", "seed: " + seed + "\ntest_command: '" + check +
                                     "'\nlimits:\n  memory_mib: " + std::to_string(memory_mib) +
                                     "\n  work_tmpfs_mib: " + std::to_string(work_mib) + "\nk8s:\n  registry: " +
                                     registry_address() + "\n  registry_plain_http: true\n");
}

// The checks every registry run shares: the seed went as an image by digest
// (the Job the API server stored names it), the pod got no Secret, and
// nothing of the run is left in the cluster or the registry.
void check_registry_run(const json& j, const std::vector<json>& jobs) {
  const json seed = j["policy"]["k8s"]["seed"];
  INFO(seed.dump());
  REQUIRE(seed["transport"] == "registry");
  const std::string digest = seed["digest"];
  CHECK(digest.rfind("sha256:", 0) == 0);
  CHECK(seed["image"] == registry_address() + "/" + kSeedImageRepo + "@" + digest);
  CHECK(seed["pull_secret"] == false);
  CHECK(seed.contains("verify_ms"));
  CHECK(j["policy"]["k8s"]["objects"].contains("seed_configmap") == false);
  bool saw = false;
  for (const auto& job : jobs) {
    if (job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != j["run_id"].get<std::string>()) continue;
    saw = true;
    const json pod = job["spec"]["template"]["spec"];
    REQUIRE(pod["initContainers"].size() == 1);
    CHECK(pod["initContainers"][0]["image"] == seed["image"]);  // by digest, as stored by the API server
    CHECK(pod["containers"][0]["volumeMounts"][0] == json({{"mountPath", "/seed"}, {"name", "seed"}, {"readOnly", true}}));
    CHECK(pod["volumes"][0]["emptyDir"].is_object());
    const std::string spec = pod.dump();
    CHECK(spec.find("\"secret\"") == std::string::npos);
    CHECK(spec.find("imagePullSecrets") == std::string::npos);
    CHECK(spec.find("hostPath") == std::string::npos);
    CHECK(spec.find("configMap") == std::string::npos);
  }
  CHECK(saw);
  K8sClient k = reg_client();
  CHECK(run_leftovers(k, j["run_id"]) == 0);
  RegistryClient r = registry();
  auto m = r.get_manifest(kSeedImageRepo, digest, kOciManifestType);
  REQUIRE(m.ok());
  CHECK_FALSE(m->has_value());  // deleted by digest with the run's objects
  for (const auto& t : seed_tags()) CHECK(t != j["run_id"].get<std::string>());
}

}  // namespace

TEST_CASE("k8s registry: a 1.5 MiB seed of 300 files goes as an image by digest, the fix is proven against its "
          "baseline, a wrong fix fails, nothing is left",
          "[k8s][registry]") {
  TempDir dir;
  const std::string seed = big_seed(dir, 300, 5243);  // 1.5 MiB of data, over the ConfigMap's 1 MiB
  const std::string config = registry_config(dir, seed, 300, 64, 512);
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  JobRecorder jobs;
  const json j = demo_fix_on_k8s(env, config, dir);
  CHECK(j["triage"]["fixed"] == json::array({"test_calculator.CalculatorTest.test_add",
                                             "test_calculator.CalculatorTest.test_add_negative"}));
  CHECK(j["policy"]["k8s"]["seed"]["files"] == 304);  // the data, SUMS, tool.sh and the two modules
  CHECK(j["policy"]["k8s"]["seed"]["bytes"].get<std::uint64_t>() > (3u << 19));
  check_registry_run(j, jobs.stop());
  K8sClient k = reg_client();
  CHECK(run_leftovers(k, j["triage"]["baseline"]["run_id"]) == 0);

  // The same seed with a wrong fix: its tests fail in the pod (the seed arrived whole: the checks passed).
  JobRecorder jobs2;
  CliResult w = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch",
                              dir.file("wrong.json", wrong_patch()), "--no-baseline", "--json", "--timeout", "120"},
                        600);
  const json wj = json_out(w);
  INFO(w.err);
  CHECK(w.exit_code == 1);
  CHECK(wj["tests_passed"] == false);
  CHECK(wj["test_output"].get<std::string>().find("test_add") != std::string::npos);
  check_registry_run(wj, jobs2.stop());
}

TEST_CASE("k8s registry: without k8s.registry a seed over 1 MiB is refused naming the ConfigMap's limit",
          "[k8s][registry]") {
  TempDir dir;
  const std::string seed = big_seed(dir, 300, 5243);
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  CliResult r = run_cli(env, {"test", "--backend", "k8s", "--seed", seed, "--patch",
                              dir.file("fix.json", fixing_patch()), "--no-baseline", "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK((r.out + r.err).find("more than a ConfigMap holds") != std::string::npos);
}

TEST_CASE("k8s registry: a 50 MiB, 10,000-file seed goes through", "[k8s][registry][big]") {
  TempDir dir;
  const std::string seed = big_seed(dir, 10000, 5243);  // 52,430,000 bytes of data
  const std::string config = registry_config(dir, seed, 10000, 192, 1024);
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  JobRecorder jobs;
  CliResult r = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch",
                              dir.file("fix.json", fixing_patch()), "--no-baseline", "--json", "--timeout", "300"},
                        900);
  const json j = json_out(r);
  INFO(r.err);
  INFO(j.value("test_output", std::string()));
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["policy"]["k8s"]["seed"]["files"] == 10004);
  CHECK(j["policy"]["k8s"]["seed"]["bytes"].get<std::uint64_t>() >= 52430000u);
  check_registry_run(j, jobs.stop());
}

TEST_CASE("k8s registry: a moved tag does not change what a digest names, and replaced content is refused by "
          "the pre-start check and by the node's pull",
          "[k8s][registry]") {
  RegistryClient reg = registry();
  const std::string tag = "it-digest-" + std::to_string(getpid());
  auto built = build_seed_image({{"a.txt", "original " + tag + "\n", 0644}}, {}, {{"io.lazyagent.run", tag}});
  REQUIRE(built.ok());
  auto img = push_seed_image(reg, *built, tag);
  REQUIRE(img.ok());
  CHECK(verify_seed_image(reg, *img).ok());
  // The tag moved to other content: the digest still names the original, which still verifies.
  auto other = build_seed_image({{"a.txt", "replaced " + tag + "\n", 0644}}, {}, {{"io.lazyagent.run", tag}});
  REQUIRE(other.ok());
  auto moved = push_seed_image(reg, *other, tag);
  REQUIRE(moved.ok());
  CHECK(moved->digest != img->digest);
  auto by_tag = reg.get_manifest(kSeedImageRepo, tag, kOciManifestType);
  REQUIRE(by_tag.ok());
  REQUIRE(by_tag->has_value());
  CHECK("sha256:" + sha256_hex(**by_tag) == moved->digest);
  CHECK(verify_seed_image(reg, *img).ok());

  // The original's seed layer replaced in the registry's storage (same size): refused.
  const std::string hexd = img->layer_digest.substr(7);
  const std::string data = registry_state() + "/data/docker/registry/v2/blobs/sha256/" + hexd.substr(0, 2) + "/" +
                           hexd + "/data";
  REQUIRE(sh("test -f " + data + " && echo yes") == "yes\n");
  std::string layer = read_file(data);
  REQUIRE(layer.size() == img->layer_bytes);
  const auto at = layer.find("original");
  REQUIRE(at != std::string::npos);
  layer.replace(at, 8, "tampered");
  {
    std::ofstream(data, std::ios::binary | std::ios::trunc) << layer;
  }
  Status st = verify_seed_image(reg, *img);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("content was replaced, refusing the run") != std::string::npos);

  // The node pulls by digest and checks it too: a pod of the tampered image never starts.
  K8sClient k = reg_client();
  const std::string pod_name = "lazyagent-it-digest-" + std::to_string(getpid());
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", pod_name}, {"namespace", "default"}}},
                    {"spec",
                     {{"restartPolicy", "Never"},
                      {"automountServiceAccountToken", false},
                      {"containers",
                       {{{"name", "c"}, {"image", img->address + "/" + kSeedImageRepo + "@" + img->digest},
                         {"command", {"/bin/busybox", "true"}}}}}}}};
  REQUIRE(k.create(kK8sPods, "default", pod).ok());
  std::string waiting;
  for (int i = 0; i < 120 && waiting.empty(); ++i) {
    auto p = k.get(kK8sPods, "default", pod_name);
    REQUIRE(p.ok());
    const PodEnd e = pod_end(**p);
    CHECK_FALSE(e.terminated);
    waiting = e.stuck;
    if (waiting.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  INFO(waiting);
  CHECK((waiting.rfind("ErrImagePull", 0) == 0 || waiting.rfind("ImagePullBackOff", 0) == 0));
  CHECK(k.remove(kK8sPods, "default", pod_name, 0).ok());
  CHECK(reg.delete_manifest(kSeedImageRepo, img->digest).ok());
  CHECK(reg.delete_manifest(kSeedImageRepo, moved->digest).ok());
  for (const auto& t : seed_tags()) CHECK(t != tag);
}

TEST_CASE("k8s registry: reap deletes the seed image of a dead run by digest and keeps a live one's, and "
          "deletes any past k8s.registry_ttl_hours",
          "[k8s][registry]") {
  RegistryClient reg = registry();
  // A run owned by a pid that is gone (this host), and one owned by this test process.
  const std::string dead = "it-reap-dead-" + std::to_string(getpid());
  const std::string live = "it-reap-live-" + std::to_string(getpid());
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  auto owner = [](const std::string& run, pid_t pid) {
    auto labels = k8s_owner_labels("sandbox", run);
    if (pid != getpid()) labels[kLabelPid] = std::to_string(pid);  // a pid that is gone
    return labels;
  };
  auto d = build_seed_image({{"x", dead, 0644}}, {}, owner(dead, gone));
  auto l = build_seed_image({{"x", live, 0644}}, {}, owner(live, getpid()));
  REQUIRE(d.ok());
  REQUIRE(l.ok());
  auto dimg = push_seed_image(reg, *d, dead);
  auto limg = push_seed_image(reg, *l, live);
  REQUIRE(dimg.ok());
  REQUIRE(limg.ok());
  // Two of another host's runs (whose processes this host cannot judge):
  // one pushed three days ago, past the default 48-hour TTL, one just now.
  const std::string old_run = "it-reap-old-" + std::to_string(getpid());
  const std::string new_run = "it-reap-new-" + std::to_string(getpid());
  const long long now = static_cast<long long>(time(nullptr));
  auto elsewhere = [&](const std::string& run, long long pushed) {
    auto labels = k8s_owner_labels("sandbox", run);
    labels[kLabelOwner] = "someone@another-host.example";
    labels[kAnnotationPushed] = std::to_string(pushed);
    return labels;
  };
  auto o = build_seed_image({{"x", old_run, 0644}}, {}, elsewhere(old_run, now - 3 * 86400));
  auto n = build_seed_image({{"x", new_run, 0644}}, {}, elsewhere(new_run, now));
  REQUIRE(o.ok());
  REQUIRE(n.ok());
  auto oimg = push_seed_image(reg, *o, old_run);
  auto nimg = push_seed_image(reg, *n, new_run);
  REQUIRE(oimg.ok());
  REQUIRE(nimg.ok());
  TempDir dir;
  const std::string config = dir.file("config.yaml", "k8s:\n  registry: " + registry_address() +
                                                         "\n  registry_plain_http: true\n");
  CliResult r = run_cli(CliEnv{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}},
                        {"reap", "--backend", "k8s", "--config", config, "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find(dead) != std::string::npos);
  auto dm = reg.get_manifest(kSeedImageRepo, dimg->digest, kOciManifestType);
  auto lm = reg.get_manifest(kSeedImageRepo, limg->digest, kOciManifestType);
  REQUIRE(dm.ok());
  REQUIRE(lm.ok());
  CHECK_FALSE(dm->has_value());
  CHECK(lm->has_value());
  CHECK(reg.delete_manifest(kSeedImageRepo, limg->digest).ok());
  auto om = reg.get_manifest(kSeedImageRepo, oimg->digest, kOciManifestType);
  auto nm = reg.get_manifest(kSeedImageRepo, nimg->digest, kOciManifestType);
  REQUIRE(om.ok());
  REQUIRE(nm.ok());
  CHECK_FALSE(om->has_value());  // past the TTL: reaped whoever owns it
  CHECK(nm->has_value());        // another host's, young: not ours to judge
  const std::string removed = json::parse(r.out)["removed"].dump();
  CHECK(removed.find(old_run) != std::string::npos);
  CHECK(removed.find(new_run) == std::string::npos);  // listed as left running
  CHECK(reg.delete_manifest(kSeedImageRepo, nimg->digest).ok());
}

TEST_CASE("k8s registry: after the suite the registry holds no seed image", "[k8s][registry][zz-last]") {
  CHECK(seed_tags().empty());
}

TEST_CASE("k8s registry: with credentials the pod pulls through its own image pull Secret that no container "
          "sees and that goes with the run (without them the push is refused and nothing starts)",
          "[k8s][registry][auth]") {
  AuthRegistry reg;
  TempDir dir;
  const std::string seed = big_seed(dir, 20, 1000);
  const std::string base = "seed: " + seed + "\ntest_command: python3 -m unittest -v\nk8s:\n  registry: " + reg.address +
                           "\n  registry_plain_http: true\n";
  // Anonymous: the registry says 401, so the seed image cannot be pushed.
  CHECK(sh("curl -s -o /dev/null -w '%{http_code}' http://" + reg.address + "/v2/") == "401");
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  {
    const std::string config = dir.file("anon.yaml", base);
    CliResult r = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch",
                                dir.file("fix.json", fixing_patch()), "--no-baseline", "--json"}, 300);
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK((r.out + r.err).find("k8s.registry: the registry " + reg.address + " said 401") != std::string::npos);
    CHECK((r.out + r.err).find("it asks for credentials: set k8s.registry_username and k8s.registry_password_file") !=
          std::string::npos);
  }
  const std::string config =
      dir.file("auth.yaml", "seed: " + seed + "\ntest_command: python3 -m unittest -v\nk8s:\n" + reg.config_lines());
  JobRecorder jobs;
  CliResult r = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch",
                              dir.file("fix.json", fixing_patch()), "--no-baseline", "--json", "--timeout", "120"},
                        600);
  const json j = json_out(r);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  const json seed_info = j["policy"]["k8s"]["seed"];
  CHECK(seed_info["transport"] == "registry");
  CHECK(seed_info["pull_secret"] == true);
  CHECK(seed_info["image"].get<std::string>().rfind(reg.address + "/", 0) == 0);
  const std::string run_id = j["run_id"];
  bool saw = false;
  for (const auto& job : jobs.stop()) {
    if (job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != run_id) continue;
    saw = true;
    // The kubelet uses it to pull; no container mounts it or reads it as env.
    CHECK(check_pull_secret_only(job["spec"]["template"]["spec"], run_id + "-registry", reg).empty());
  }
  CHECK(saw);
  // Gone with the run: the Secret, the Job's objects, the seed image.
  K8sClient k = reg_client();
  check_pull_secrets_gone(k, run_id, {run_id + "-registry"});
  CHECK(run_leftovers(k, run_id) == 0);
  for (const auto& t : reg.tags()) CHECK(t != run_id);
  // The password is in no file of the run store.
  CHECK(reg.files_with_credentials(dir.path() + "/state") == 0);
  CHECK_FALSE(reg.in_text(r.out + r.err));
}
