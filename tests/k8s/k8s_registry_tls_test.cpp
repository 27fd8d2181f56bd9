// k8s.registry over verified TLS (issue 32 item 1) on the real local cluster
// and a real https registry (scripts/k8s-registry.sh tls-start, port 25502,
// started and stopped with the cluster: a private CA made by the script,
// a certificate for IP 127.0.0.1, containerd trusting that CA for that host
// in its hosts.toml). The CLI pushes the seed image verifying the CA of
// k8s.registry_ca_file, the kubelet pulls it by digest over TLS; a missing or
// wrong CA, a certificate for another host name, and plain HTTP vs https
// mixed up are refused naming the fix before anything is pushed or any Job
// made; podman, which pushes environment images and takes no CA, is asked to
// trust it through its certs.d, and the image then goes through.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "../corpus/corpus_projects.h"
#include "harness.h"
#include "k8s_registry_support.h"
#include "engine/k8s/k8s_environments.h"
#include "engine/k8s/podman_registry_trust.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;
using namespace k8sreg;

namespace {

// The cluster's https registry (idempotent: the cluster's start started it).
struct TlsRegistry {
  std::string address, ca_file;
  TlsRegistry() {
    const std::string script = std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh";
    address = trimmed(sh(script + " tls-start 2>/dev/null"));
    ca_file = trimmed(sh(script + " tls-ca"));
    REQUIRE(address == "127.0.0.1:25502");
    REQUIRE(std::filesystem::exists(ca_file));
  }
  RegistryClient client() const {
    RegistryConnection c;
    c.address = address;
    c.ca_pem = read_file(ca_file);
    c.ca_file = ca_file;
    return RegistryClient(c);
  }
  std::vector<std::string> tags(const std::string& repo) const {
    RegistryClient r = client();
    auto t = r.tags(repo);
    REQUIRE(t.ok());
    return *t;
  }
  std::string config_lines() const { return "  registry: " + address + "\n  registry_ca_file: " + ca_file + "\n"; }
};

// What a test writes into podman's certs.d, removed when it ends (the file and
// the directories it made, nothing else).
struct CertsDGuard {
  std::vector<std::filesystem::path> made;
  explicit CertsDGuard(const std::string& address) : dir("/etc/containers/certs.d/" + address) {
    // Someone else's trust for this address: not ours to touch.
    REQUIRE_FALSE(std::filesystem::exists(dir));
  }
  void install(const std::string& ca_file) {
    for (std::filesystem::path p = dir; !std::filesystem::exists(p); p = p.parent_path()) made.insert(made.begin(), p);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(ca_file, dir / "ca.crt");
  }
  ~CertsDGuard() {
    std::error_code ec;
    std::filesystem::remove(dir / "ca.crt", ec);
    for (auto it = made.rbegin(); it != made.rend(); ++it) std::filesystem::remove(*it, ec);
  }
  std::filesystem::path dir;
};


}  // namespace

TEST_CASE("k8s registry tls: a seed goes to the https registry verified against its private CA, the kubelet pulls "
          "it by digest over TLS, the fix is proven, nothing is left",
          "[k8s][registry][tls]") {
  TlsRegistry reg;
  TempDir dir;
  const std::string config =
      dir.file("config.yaml", "seed: " + seed_dir() + "\nk8s:\n" + reg.config_lines());
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  JobRecorder jobs;
  const json j = demo_fix_on_k8s(env, config, dir);
  const json seed = j["policy"]["k8s"]["seed"];
  INFO(seed.dump());
  REQUIRE(seed["transport"] == "registry");
  const std::string digest = seed["digest"];
  REQUIRE(digest.rfind("sha256:", 0) == 0);
  CHECK(seed["image"] == reg.address + "/" + kSeedImageRepo + "@" + digest);
  // The Jobs the API server stored (baseline and fix) name the image by digest in the https registry.
  const std::vector<std::string> runs = {j["run_id"], j["triage"]["baseline"]["run_id"]};
  int named = 0;
  for (const auto& job : jobs.stop()) {
    const std::string run = job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string());
    if (run != runs[0] && run != runs[1]) continue;
    const std::string image = job["spec"]["template"]["spec"]["initContainers"][0]["image"];
    CHECK(image.rfind(reg.address + "/" + kSeedImageRepo + "@sha256:", 0) == 0);
    if (run == runs[0]) CHECK(image == seed["image"].get<std::string>());
    ++named;
  }
  CHECK(named >= 2);
  // Gone from the registry (deleted by digest over TLS) and from the cluster.
  RegistryClient c = reg.client();
  auto m = c.get_manifest(kSeedImageRepo, digest, kOciManifestType);
  REQUIRE(m.ok());
  CHECK_FALSE(m->has_value());
  K8sClient k = reg_client();
  for (const auto& run : runs) CHECK(run_leftovers(k, run) == 0);
  // The registry only speaks TLS: what the kubelet pulled, it pulled over https.
  CHECK(sh("curl -s http://" + reg.address + "/v2/") == "Client sent an HTTP request to an HTTPS server.\n");
  WARN("seed through the https registry: " << seed.dump());
}

TEST_CASE("k8s registry tls: no CA, a wrong CA, another host name, plain HTTP and https mixed up are each refused "
          "naming the fix, before anything is pushed or any Job made",
          "[k8s][registry][tls]") {
  TlsRegistry reg;
  TempDir dir;
  const std::string plain = registry_address();
  const std::string other_ca = dir.path() + "/other-ca.crt";
  REQUIRE(sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=other "
             "-keyout " + dir.path() + "/other.key -out " + other_ca + " 2>/dev/null && echo ok") == "ok\n");
  const std::string not_pem = dir.file("not-a-ca.pem", "this is no certificate\n");
  struct Case {
    std::string name, k8s_lines, said;
  };
  const std::vector<Case> cases = {
      {"no CA", "  registry: " + reg.address + "\n",
       "k8s.registry: the registry " + reg.address + " (GET /v2/): SSL certificate problem: unable to get local "
       "issuer certificate (its certificate is signed by a CA this machine does not trust: set "
       "k8s.registry_ca_file to the PEM file of that CA (the local cluster's TLS registry: scripts/k8s-registry.sh "
       "tls-ca prints it))"},
      {"wrong CA", "  registry: " + reg.address + "\n  registry_ca_file: " + other_ca + "\n",
       "(its certificate is not signed by the CA in k8s.registry_ca_file (" + other_ca +
           "): name the CA that signed the registry's certificate)"},
      {"another host name", "  registry: localhost:25502\n  registry_ca_file: " + reg.ca_file + "\n",
       "SSL: no alternative certificate subject name matches target host name 'localhost' (its certificate is not "
       "for the host 'localhost' that k8s.registry names: address it by a name or IP address its certificate lists "
       "(subjectAltName), or reissue the certificate for localhost)"},
      {"plain HTTP addressed as https", "  registry: " + plain + "\n",
       "k8s.registry: the registry " + plain + " (GET /v2/): "},
      {"https addressed as plain HTTP", "  registry: " + reg.address + "\n  registry_plain_http: true\n",
       "(it speaks HTTPS, not plain HTTP: remove k8s.registry_plain_http (and set k8s.registry_ca_file to the PEM "
       "file of the CA that signed its certificate when that CA is private))"},
      {"a CA for plain HTTP", "  registry: " + plain + "\n  registry_plain_http: true\n  registry_ca_file: " +
                                  reg.ca_file + "\n",
       "k8s.registry_ca_file is for an https registry, and k8s.registry_plain_http: true says plain HTTP: drop one "
       "of them"},
      {"a CA file with no certificate", "  registry: " + reg.address + "\n  registry_ca_file: " + not_pem + "\n",
       "k8s.registry_ca_file: " + not_pem + " holds no PEM certificate"},
  };
  const auto plain_tags_before = registry().tags(kSeedImageRepo);
  REQUIRE(plain_tags_before.ok());
  Recorder all_jobs(kK8sJobs, kLabelRun);
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string config = dir.file("config.yaml", "seed: " + seed_dir() + "\nk8s:\n" + c.k8s_lines);
    CliEnv env{dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
    CliResult r = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch",
                                dir.file("fix.json", fixing_patch()), "--json"},
                          300);
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    const std::string said = r.out + r.err;
    CHECK(said.find(c.said) != std::string::npos);
    if (c.name == "https addressed as plain HTTP") {
      CHECK(said.find("k8s.registry: the registry " + reg.address + " said 400 to GET /v2/: Client sent an HTTP "
                      "request to an HTTPS server.") != std::string::npos);
    }
    if (c.name == "plain HTTP addressed as https") {
      CHECK(said.find("wrong version number (it does not speak TLS: for a registry that serves plain HTTP set "
                      "k8s.registry_plain_http: true (only for one the nodes reach on their loopback), else serve it "
                      "over https)") != std::string::npos);
    }
  }
  CHECK(all_jobs.stop().empty());
  CHECK(reg.tags(kSeedImageRepo).empty());
  const auto plain_tags_after = registry().tags(kSeedImageRepo);
  REQUIRE(plain_tags_after.ok());
  CHECK(*plain_tags_after == *plain_tags_before);
}

TEST_CASE("k8s registry tls: podman pushes the environment image over verified TLS once its certs.d trusts the CA "
          "(before that it is refused saying what to install where, with nothing pushed and no Job)",
          "[k8s][registry][tls][environment]") {
  TlsRegistry reg;
  const corpus::CorpusProject p = corpus::ordered_set_project();
  corpus::Prepared prep;
  corpus::prepare(p, &prep);
  const std::string config =
      prep.dir.file("corpus.yaml", "seed: " + prep.repo + "\n" + p.config + "k8s:\n" + reg.config_lines());
  CliEnv env{prep.dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  REQUIRE(getuid() == 0);  // the rootful podman service reads /etc/containers/certs.d
  CertsDGuard certs(reg.address);
  JobRecorder jobs;
  {
    CliResult r = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", prep.fix_file, "--json"},
                          900);
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK((r.out + r.err).find("podman pushes the environment image to the https registry " + reg.address +
                               " and its push API takes no CA") != std::string::npos);
    CHECK((r.out + r.err).find("install -D -m 0644 " + reg.ca_file + " /etc/containers/certs.d/" + reg.address +
                               "/ca.crt") != std::string::npos);
    CHECK(reg.tags(kEnvironmentRegistryRepo).empty());
    CHECK(reg.tags(kSeedImageRepo).empty());
    CHECK(jobs.stop().empty());
  }
  certs.install(reg.ca_file);
  JobRecorder jobs2;
  const auto good = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", prep.fix_file, "--json",
                                  "--timeout", "300"},
                            900);
  INFO(good.err.substr(good.err.size() > 6000 ? good.err.size() - 6000 : 0));
  REQUIRE(good.exit_code == 0);
  const json g = json_out(good);
  CHECK(g["status"] == "passed");
  CHECK(corpus::sorted_strings(g["triage"]["fixed"]) == p.fixed);
  const json e = g["environment"]["registry"];
  INFO(e.dump());
  const std::string key = g["environment"]["key"];
  CHECK(e["pushed"] == true);
  CHECK(e["tag"] == reg.address + "/lazyagent-env:" + key);
  const std::string digest = e["digest"];
  CHECK(e["image"] == reg.address + "/lazyagent-env@" + digest);
  RegistryClient c = reg.client();
  auto there = c.manifest_digest(kEnvironmentRegistryRepo, key, kImageManifestTypes);
  REQUIRE(there.ok());
  REQUIRE(there->has_value());
  CHECK(**there == digest);
  int pulled = 0;
  for (const auto& job : jobs2.stop()) {
    const std::string run = job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string());
    if (run != g["run_id"].get<std::string>() && run != g["triage"]["baseline"]["run_id"].get<std::string>()) continue;
    CHECK(job["spec"]["template"]["spec"]["containers"][0]["image"] == e["image"]);
    ++pulled;
  }
  CHECK(pulled >= 2);
  K8sClient k = reg_client();
  CHECK(run_leftovers(k, g["run_id"]) == 0);
  // The environment is not per run: this test removes it from the registry.
  CHECK(c.delete_manifest(kEnvironmentRegistryRepo, digest).ok());
  WARN("environment " << key << " pushed by podman over TLS in " << e["push_ms"] << " ms; " << g["timings"].dump());
}
