// `--backend k8s` end to end on a real cluster (scripts/k8s-cluster.sh): the
// real CLI, the real planner and sandbox images in containerd, the project's
// scripted provider as the model. Needs KUBECONFIG (or the local cluster's
// kubeconfig, found through `scripts/k8s-cluster.sh status`) and
// LAZYAGENT_K8S_HOST_IP (default 10.244.91.1: the local cluster's bridge
// gateway, where pods reach this host).
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <set>
#include <thread>

#include "harness.h"
#include "k8s_fixtures.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/kubeconfig.h"
#include "util/base64.h"
#include "store/ownership.h"
#include "store/provenance.h"
#include "provider/provider_stub.h"
#include "store/run_store.h"
#include "policy/sandbox_policy.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;

namespace {

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

StubReply reply(const std::string& patch) {
  StubReply r;
  r.content = json::parse(patch).dump();
  return r;
}

// Emulated NetworkPolicy enforcement: the node drops whatever the pods on the
// local cluster's bridge send, to the node itself (INPUT) and beyond it
// (FORWARD), as an enforcing CNI drops a deny-all pod's egress. Every rule
// carries a comment; construction first removes any a killed run left, the
// destructor removes them on every path out of the test.
class DropPodEgress {
 public:
  // `allow` ("ADDR:PORT"): one tcp address the pods may still reach on the
  // node (the provider: an enforcing CNI under the planner's egress policy).
  explicit DropPodEgress(const std::string& allow = "") {
    clear();
    for (const char* chain : {"INPUT", "FORWARD"}) {
      const std::string out = sh(std::string("iptables -w -I ") + chain + " 1 " + rule() + " 2>&1 && echo added");
      INFO(out);
      REQUIRE(out.find("added") != std::string::npos);
    }
    if (!allow.empty()) {
      const auto colon = allow.rfind(':');
      allow_ = "-i " + bridge() + " -s " + subnet() + " -d " + allow.substr(0, colon) + " -p tcp --dport " +
               allow.substr(colon + 1) + " -m comment --comment " + kComment + " -j ACCEPT";
      const std::string out = sh("iptables -w -I INPUT 1 " + allow_ + " 2>&1 && echo added");
      INFO(out);
      REQUIRE(out.find("added") != std::string::npos);
    }
  }
  ~DropPodEgress() { clear(); }
  static std::size_t rules_left() {
    const std::string out = sh("iptables -w -S 2>/dev/null | grep -c " + std::string(kComment) + " || true");
    return static_cast<std::size_t>(std::atoi(out.c_str()));
  }

 private:
  static constexpr const char* kComment = "lazyagent-it-drop-pod-egress";
  static std::string bridge() {
    const char* b = std::getenv("LAZYAGENT_K8S_BRIDGE");
    return b && *b ? b : "lzacni0";
  }
  static std::string subnet() {
    const char* s = std::getenv("LAZYAGENT_K8S_POD_SUBNET");
    return s && *s ? s : "10.244.91.0/24";
  }
  static std::string rule() {
    return "-i " + bridge() + " -s " + subnet() + " -m comment --comment " + kComment + " -j DROP";
  }
  void clear() {
    for (const char* chain : {"INPUT", "FORWARD"}) {
      (void)sh(std::string("while iptables -w -D ") + chain + " " + rule() + " 2>/dev/null; do :; done");
    }
    if (!allow_.empty()) (void)sh("while iptables -w -D INPUT " + allow_ + " 2>/dev/null; do :; done");
    // A killed run's ACCEPT rules, whatever their port: by their comment.
    (void)sh(std::string("iptables -w -S INPUT | grep -- '") + kComment +
             "' | grep -- '-j ACCEPT' | sed 's/^-A /-D /' | while read -r r; do eval iptables -w $r; done");
  }
  std::string allow_;
};

}  // namespace

TEST_CASE("k8s: a fixing patch passes, signed on the CLI's side, the sandbox pod had only lo, everything of the run "
          "is deleted", "[k8s]") {
  Provider p({reply(fixing_patch())});
  K8sClient k = client();
  Recorder pods(kK8sPods, "io.lazyagent.role=sandbox");
  Recorder configmaps(kK8sConfigMaps, "io.lazyagent.run");
  TempDir keys;
  const json key = json_out(p.cli({"keygen", "--out", keys.path() + "/k", "--json"}));
  CliResult r = p.run({"--sign-key", key["private_key"].get<std::string>()});
  const json j = json_out(r);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["status"] == "passed");
  CHECK(j["test_exit_code"] == 0);
  CHECK(j["changed_paths"] == json::array({"calculator.py"}));
  const std::string run_id = j["run_id"];
  CHECK(j["planner_task_id"] == "t-" + run_id.substr(2));  // as on podman: one pipeline names the task
  // The same judged result as on podman: per-test results, the category, and
  // the triage against the seed's unpatched tests (run as a Job too).
  CHECK(j["category"] == "passed");
  CHECK(j["tests"]["format"] == "junit");  // the same driver as on podman (runner_driver.h)
  CHECK(j["evidence"] == "driver");
  CHECK(j["tests"]["tests"].size() == 4);
  CHECK(j["triage"]["verdict"] == "passed");
  CHECK(j["triage"]["fixed"] == json::array({"test_calculator.CalculatorTest.test_add",
                                             "test_calculator.CalculatorTest.test_add_negative"}));
  CHECK(j["triage"]["baseline"]["tests_passed"] == false);
  CHECK(j["triage"]["baseline"]["run_id"] != j["run_id"]);
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + j["triage"]["baseline"]["run_id"].get<std::string>()) == 0);
  CHECK(j["image_digest"].get<std::string>().find("sha256:") != std::string::npos);  // the pod's imageID
  const json k8s = j["policy"]["k8s"];
  CHECK(k8s["objects"]["sandbox_job"] == j["run_id"].get<std::string>() + "-sandbox");
  CHECK(j["sandbox_id"].get<std::string>().rfind("default/" + j["run_id"].get<std::string>() + "-sandbox-", 0) == 0);
  CHECK(j["isolation_probe"]["interfaces"] == json::array({"lo"}));
  // runtime-nonet (the default): only lo, and the egress probe reached nothing.
  CHECK(k8s["isolation"] == "runtime-nonet");
  CHECK(j["isolation_probe"]["egress"]["ran"] == true);
  CHECK(j["isolation_probe"]["egress"]["reached"].empty());
  // The API server (2 addresses) and the outside, which is the package mirror
  // of this machine's apt sources (egress_probe.h: no other outside address).
  CHECK(j["isolation_probe"]["egress"]["attempts"].size() >= 4);
  std::size_t external = 0;
  for (const auto& a : j["isolation_probe"]["egress"]["attempts"]) external += a["target"] == "external";
  CHECK(external >= 2);  // the mirror on 80 and 443
  // The API server's address reaches the probe from the engine (the pod's
  // KUBERNETES_SERVICE_* variables are not in its environment): the
  // `kubernetes` Service's ClusterIP, tried and not reached.
  std::string api_service;
  for (const auto& t : k8s["egress_probe_targets"]) {
    if (t.get<std::string>().rfind("api-service=", 0) == 0) api_service = t.get<std::string>().substr(12);
  }
  CHECK_FALSE(api_service.empty());
  bool tried = false;
  for (const auto& a : j["isolation_probe"]["egress"]["attempts"]) {
    tried = tried || (a["target"] == "api-service" && a["address"] == api_service);
  }
  CHECK(tried);
  CHECK(k8s["provider_transport"].get<std::string>().find("plain http, opted in") == 0);
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + j["run_id"].get<std::string>()) == 0);
  CHECK(j["policy"]["user"]["mode"] == "non_root_uid");  // the pod's uid, no podman id map
  CHECK(j["policy"]["user"]["uid"] == 1000);
  CHECK(j["policy"]["runtime"] == "k8s:lazyagent-nonet");
  // The record's provenance matches what is stored (verify recomputes every hash).
  CliResult v = p.cli({"verify", j["run_id"].get<std::string>(), "--json"});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);

  // Signed as on podman (docs/signing.md): the envelope verifies offline with
  // the public key and the seed, the statement names the k8s backend and the
  // image the pod really ran, and a changed seed does not verify.
  REQUIRE(j["attestation"].is_object());
  CHECK(j["attestation"]["keyid"] == key["keyid"]);
  const std::string envelope_path = j["attestation"]["path"];
  CliResult sv = p.cli({"verify", "--key", key["public_key"].get<std::string>(), envelope_path, "--seed", seed_dir(),
                        "--require-passed", "--json"});
  INFO(sv.out << sv.err);
  CHECK(sv.exit_code == 0);
  CHECK(json_out(sv)["verified"] == true);
  const json envelope = json::parse(read_file(envelope_path));
  const json statement = json::parse(*base64_decode(envelope["payload"].get<std::string>()));
  CHECK(statement["predicate"]["result"] == "PASSED");
  CHECK(statement["predicate"]["run"]["backend"] == "k8s");
  CHECK(statement["predicate"]["run"]["id"] == j["run_id"]);
  const std::string pod_image = j["image_digest"].get<std::string>();
  bool image_subject = false;
  for (const auto& sub : statement["subject"]) {
    image_subject = image_subject || pod_image.find(sub["digest"].value("sha256", std::string("-"))) != std::string::npos;
  }
  CHECK(image_subject);  // the pod's imageID, known only after the run
  CHECK(p.cli({"attestation", j["run_id"].get<std::string>()}).out == read_file(envelope_path));
  TempDir other_seed;
  other_seed.file("calculator.py", "def add(a, b):\n    return a + b\n");
  CHECK(p.cli({"verify", "--key", key["public_key"].get<std::string>(), envelope_path, "--seed", other_seed.path()})
            .exit_code == 1);
  // The private key never entered the cluster: not in a pod's spec, not in a ConfigMap of a run.
  std::vector<std::string> canaries;
  std::istringstream pem(read_file(key["private_key"].get<std::string>()));
  for (std::string line; std::getline(pem, line);) {
    if (!line.empty() && line.rfind("-----", 0) != 0) canaries.push_back(line);
  }
  REQUIRE_FALSE(canaries.empty());
  const auto maps = configmaps.stop();
  CHECK_FALSE(maps.empty());  // positive control: the run's ConfigMaps were seen
  for (const auto& m : maps) {
    for (const auto& c : canaries) CHECK(m.dump().find(c) == std::string::npos);
  }

  // The provider Secret never appears in the sandbox pod's spec or env.
  const auto seen = pods.stop();
  bool saw_ours = false;
  for (const auto& pod : seen) {
    if (pod.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != j["run_id"].get<std::string>()) continue;
    saw_ours = true;
    const std::string spec = pod["spec"].dump();
    CHECK(spec.find("lazyagent-it-provider") == std::string::npos);
    CHECK(spec.find("\"secret\"") == std::string::npos);
    CHECK(spec.find("secretKeyRef") == std::string::npos);
    CHECK(spec.find("envFrom") == std::string::npos);
    CHECK(spec.find(kKey) == std::string::npos);
    for (const auto& c : canaries) CHECK(spec.find(c) == std::string::npos);
    CHECK(pod["spec"]["automountServiceAccountToken"] == false);
    CHECK(pod["spec"]["runtimeClassName"] == "lazyagent-nonet");
  }
  CHECK(saw_ours);
}

TEST_CASE("k8s: a wrong patch fails with the runner's report", "[k8s]") {
  Provider p({reply(wrong_patch())});
  CliResult r = p.run();
  const json j = json_out(r);
  CHECK(r.exit_code == 1);
  CHECK(j["tests_passed"] == false);
  CHECK(j["test_exit_code"] != 0);
  CHECK(j["test_output"].get<std::string>().find("FAILED") != std::string::npos);
}

TEST_CASE("k8s: report junit:PATH, the file written in the sandbox pod decides the verdict", "[k8s]") {
  // unittest prints its own OK; the JUnit file says two tests, one failed: as
  // on podman (tests/integration/junit_test.cpp), the file comes out through
  // the pod's log and decides.
  Provider p({reply(fixing_patch())},
             "report: junit:out/results.xml\n"
             "test_command: >-\n"
             "  python3 -m unittest -q 2>&1; mkdir -p out &&\n"
             "  printf '%s' '<testsuites><testsuite><testcase classname=\"t\" name=\"a\"/>"
             "<testcase classname=\"t\" name=\"b\"><failure message=\"no\"/></testcase></testsuite></testsuites>'\n"
             "  > out/results.xml\n");
  CliResult r = p.run({"--no-baseline"});
  const json j = json_out(r);
  INFO(r.err << j.dump(2));
  CHECK(r.exit_code == 1);
  CHECK(j["test_exit_code"] == 0);
  CHECK(j["evidence"] == "junit");
  CHECK(j["reason"] == "inconsistent: the test command exited 0 but junit reported 1 failed");
  CHECK(j["runner"]["tests_run"] == 2);
  CHECK(j["tests"]["tests"] == json::array({{{"id", "t.a"}, {"outcome", "passed"}},
                                           {{"id", "t.b"}, {"outcome", "failed"}}}));
  const std::string out = j["test_output"];
  CHECK(out.find("Ran 4 tests") != std::string::npos);
  CHECK(out.find("<testsuites>") == std::string::npos);  // the block is taken out of the log
}

TEST_CASE("k8s: the documented RBAC Role is enough: configure and run under its ServiceAccount, which can do "
          "nothing else", "[k8s]") {
  const std::string src = LAZYAGENT_SOURCE_DIR;
  const std::string kubectl = src + "/scripts/k8s-cluster.sh kubectl ";
  const std::string rbac = src + "/docs/k8s-rbac.yaml";
  const std::string applied = sh(kubectl + "apply -f " + rbac + " 2>&1");
  INFO(applied);
  REQUIRE(applied.find("role.rbac.authorization.k8s.io/lazyagent-oci") != std::string::npos);
  struct Cleanup {
    std::string cmd;
    ~Cleanup() { (void)sh(cmd); }
  } cleanup{kubectl + "delete --ignore-not-found -f " + rbac + " >/dev/null 2>&1"};

  // The ServiceAccount's token (1.20: the token controller makes its Secret).
  K8sClient admin = client();
  const K8sKind service_accounts{"/api/v1", "serviceaccounts", "ServiceAccount"};
  std::string token;
  for (int i = 0; i < 100 && token.empty(); ++i) {
    auto sa = admin.get(service_accounts, kNs, "lazyagent-oci");
    REQUIRE(sa.ok());
    if (sa->has_value() && !(**sa).value("secrets", json::array()).empty()) {
      auto secret = admin.get(kK8sSecrets, kNs, (**sa)["secrets"][0]["name"].get<std::string>());
      REQUIRE(secret.ok());
      if (secret->has_value()) {
        auto t = base64_decode((**secret).value("/data/token"_json_pointer, std::string()));
        if (t) token = *t;
      }
    }
    if (token.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE_FALSE(token.empty());
  auto conn = load_kubeconfig(kubeconfig());
  REQUIRE(conn.ok());
  TempDir kc_dir;
  const std::string sa_kubeconfig = kc_dir.file(
      "kubeconfig", "apiVersion: v1\nkind: Config\ncurrent-context: sa\n"
                    "clusters:\n- name: local\n  cluster:\n    server: " + conn->server +
                    "\n    certificate-authority-data: " + base64_encode(conn->ca_pem) +
                    "\nusers:\n- name: sa\n  user:\n    token: " + token +
                    "\ncontexts:\n- name: sa\n  context:\n    cluster: local\n    user: sa\n    namespace: default\n");

  // Not cluster-admin: another namespace's Secrets and the nodes are forbidden.
  auto sa_conn = load_kubeconfig(sa_kubeconfig);
  REQUIRE(sa_conn.ok());
  K8sClient sa(*sa_conn);
  auto other = sa.list(kK8sSecrets, "kube-system", "");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message.find("403") != std::string::npos);

  // configure (the provider Secret) and a whole run with its baseline, as that account.
  Provider p({reply(fixing_patch())}, "", seed_dir(), sa_kubeconfig);
  CliResult r = p.run();
  const json j = json_out(r);
  INFO(r.err << j.dump(2));
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["triage"]["verdict"] == "passed");
  CHECK(leftovers(admin, "io.lazyagent.run=" + j["run_id"].get<std::string>()) == 0);
  CliResult reap = p.cli({"reap", "--backend", "k8s", "--json"});
  INFO(reap.err);
  CHECK(reap.exit_code == 0);
}

TEST_CASE("k8s: a refused patch creates no sandbox Job", "[k8s]") {
  Provider p({reply(patch_json("test_calculator.py", "print('rigged')\n"))});
  Recorder jobs(kK8sJobs, "io.lazyagent.role");
  CliResult r = p.run();
  const json j = json_out(r);
  CHECK(r.exit_code == 4);
  CHECK(j["status"] == "refused");
  const auto seen = jobs.stop();
  bool planner = false, sandbox = false;
  for (const auto& job : seen) {
    if (job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != j["run_id"].get<std::string>()) continue;
    const std::string role = job.value("/metadata/labels/io.lazyagent.role"_json_pointer, std::string());
    planner = planner || role == "planner";
    sandbox = sandbox || role == "sandbox";
  }
  CHECK(planner);   // the recorder saw the run's Jobs at all
  CHECK_FALSE(sandbox);
}

TEST_CASE("k8s: the sandbox cannot reach the host, the planner's provider, or read the key from any file", "[k8s]") {
  // The prelude runs at import, before the tests: it tries the provider stub
  // on the host (where the planner just got its patch) and scans the files.
  // A listener on this host, on every address: a connection from the sandbox would be counted.
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(lfd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(lfd, 16) == 0);
  socklen_t alen = sizeof a;
  REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen) == 0);
  const int lport = ntohs(a.sin_port);
  std::atomic<int> accepted{0};
  struct Acceptor {
    int fd;
    std::thread t;
    ~Acceptor() {
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      if (t.joinable()) t.join();
    }
  } acceptor{lfd, std::thread([&accepted, lfd] {
               for (;;) {
                 const int c = ::accept(lfd, nullptr, nullptr);
                 if (c < 0) return;
                 ++accepted;
                 ::close(c);
               }
             })};
  const std::string prelude =
      "import socket, os\n"
      "def _lz_try(host, port):\n"
      "    try:\n"
      "        s = socket.create_connection((host, port), timeout=3); s.close(); return 'OPEN'\n"
      "    except Exception as e:\n"
      "        return 'BLOCKED ' + type(e).__name__\n"
      "print('LZ-EGRESS start', flush=True)\n"
      "print('LZ-EGRESS host:', _lz_try('" + host_ip() + "', " + std::to_string(lport) + "), flush=True)\n"
      "_lz_hits = 0; _lz_files = 0\n"
      "for _d in ('/seed', '/work', '/tmp', '/etc', '/run', '/var/run', '/home', '/root'):\n"
      "    for _r, _ds, _fs in os.walk(_d):\n"
      "        for _f in _fs:\n"
      "            _p = os.path.join(_r, _f)\n"
      "            if os.path.islink(_p) or not os.path.isfile(_p): continue  # a FIFO would block\n"
      "            try:\n"
      "                _lz_files += 1\n"
      "                if bytes.fromhex('" + hex(kKey) + "') in open(os.path.join(_r, _f), 'rb').read(1 << 20): _lz_hits += 1\n"
      "            except Exception: pass\n"
      "_lz_hits += bytes.fromhex('" + hex(kKey) + "') in open('/proc/self/environ', 'rb').read()\n"
      "print('LZ-SCAN files:', _lz_files, 'hits:', _lz_hits, flush=True)\n";
  Provider p({reply(attack_patch(prelude))});
  const long before = p.stub().requests();
  CliResult r = p.run();
  INFO(r.out << r.err);
  const json j = json_out(r);
  const std::string out = j["test_output"];
  INFO(out);
  CHECK(out.find("LZ-EGRESS host: BLOCKED") != std::string::npos);
  CHECK(out.find("LZ-SCAN files:") != std::string::npos);
  CHECK(out.find("hits: 0") != std::string::npos);
  CHECK(p.stub().requests() == before + 1);  // only the planner's request reached the provider
  CHECK(r.exit_code == 0);
  // control: the listener does accept from this host
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(lport));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(::connect(probe, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  ::close(probe);
  for (int i = 0; i < 50 && accepted == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(accepted == 1);  // only the control connection
}

TEST_CASE("k8s: without the no-network RuntimeClass the probe sees the pod's interface: an isolation violation, "
          "not infra_error, never retried", "[k8s]") {
  Provider p({reply(fixing_patch())}, "  runtime_class: none\n");
  K8sClient k = client();
  CliResult r = p.run();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 5);
  const json j = json_out(r);
  CHECK(j["category"] == "isolation_violation");
  CHECK(j["error_kind"] == "isolation");
  const std::string e = j["error"];
  CHECK(e.find("the isolation probe inside the sandbox found: ") != std::string::npos);
  CHECK(e.find("eth0") != std::string::npos);
  CHECK(e.find("infra_error") == std::string::npos);
  CHECK(r.err.find("retrying") == std::string::npos);
  CHECK(r.out.find("\"tests_passed\": true") == std::string::npos);
  CHECK(leftovers(k, "io.lazyagent.run") == 0);
}

TEST_CASE("k8s: isolation networkpolicy on the bridge CNI, which does not enforce NetworkPolicy: refused by the "
          "egress probe, saying so and what to do", "[k8s]") {
  Provider p({}, "  isolation: networkpolicy\n");
  K8sClient k = client();
  TempDir dir;
  CliResult r = p.cli({"test", "--backend", "k8s", "--config", p.config(), "--patch",
                       dir.file("fix.json", fixing_patch()), "--no-baseline", "--json"});
  const json j = json_out(r);
  INFO(r.err << j.dump(2));
  CHECK(r.exit_code == 5);
  CHECK(j["category"] == "isolation_violation");
  CHECK_FALSE(j.contains("tests_passed"));  // no verdict at all
  const std::string e = j["error"];
  CHECK(e.find("the isolation probe inside the sandbox found: ") != std::string::npos);
  // The node answers on the pod's gateway: named, with the outcome.
  CHECK(e.find("egress reached: gateway tcp 10.244.91.1:") != std::string::npos);
  CHECK(e.find("k8s.isolation networkpolicy: the sandbox pod reached the addresses above, so this cluster does not "
               "enforce the deny-all NetworkPolicy") != std::string::npos);
  CHECK(e.find("eth0") == std::string::npos);  // the interface itself is no finding in this mode
  // The pod's resolver on this cluster is 127.0.0.1: the pod's own loopback, never a finding.
  CHECK(e.find("127.0.0.1") == std::string::npos);
  CHECK(r.err.find("retrying") == std::string::npos);
  CHECK(leftovers(k, "io.lazyagent.run") == 0);
}

TEST_CASE("k8s: isolation networkpolicy with enforcement emulated on the node (iptables drops the pods' egress): "
          "runs pass, the probe reached nothing, the rules are removed", "[k8s]") {
  Provider p({}, "  isolation: networkpolicy\n");
  K8sClient k = client();
  TempDir dir;
  const std::string patch = dir.file("fix.json", fixing_patch());
  json j;
  {
    DropPodEgress drop;
    REQUIRE(DropPodEgress::rules_left() == 2);
    // With the baseline: two sandbox Jobs, each judged by its own probe.
    CliResult r = p.cli({"test", "--backend", "k8s", "--config", p.config(), "--patch", patch, "--json"});
    j = json_out(r);
    INFO(r.err << j.dump(2));
    CHECK(r.exit_code == 0);
  }
  CHECK(DropPodEgress::rules_left() == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["triage"]["verdict"] == "passed");
  const json probe = j["isolation_probe"];
  CHECK(probe["violations"].empty());
  CHECK(probe["interfaces"] != json::array({"lo"}));  // the pod has its eth0: the egress probe decided
  CHECK(probe["egress"]["ran"] == true);
  CHECK(probe["egress"]["reached"].empty());
  bool gateway = false;
  for (const auto& a : probe["egress"]["attempts"]) {
    if (a["target"] == "gateway" && a["proto"] == "tcp") {
      gateway = true;
      CHECK(a["outcome"] == "timeout");  // dropped, not refused
    }
  }
  CHECK(gateway);
  WARN("egress probe in the pod, every packet dropped: " << probe["egress"]["ms"] << " ms");
  const json k8s = j["policy"]["k8s"];
  CHECK(k8s["isolation"] == "networkpolicy");
  CHECK(k8s["isolation_proof"].get<std::string>().find("egress probe") != std::string::npos);
  bool stated = false;
  for (const auto& line : k8s["enforced"]) {
    stated = stated || line.get<std::string>().find("the egress probe in this pod reached none") != std::string::npos;
  }
  CHECK(stated);
  CHECK(leftovers(k, "io.lazyagent.run") == 0);

  // The rules are gone: the same run is refused again.
  CliResult again = p.cli({"test", "--backend", "k8s", "--config", p.config(), "--patch", patch, "--no-baseline",
                           "--json"});
  CHECK(again.exit_code == 5);
}

TEST_CASE("k8s: isolation runtimeclass with the no-network RuntimeClass: judged by the egress probe, passes", "[k8s]") {
  Provider p({}, "  isolation: runtimeclass\n");
  TempDir dir;
  CliResult r = p.cli({"test", "--backend", "k8s", "--config", p.config(), "--patch",
                       dir.file("fix.json", fixing_patch()), "--no-baseline", "--json"});
  const json j = json_out(r);
  INFO(r.err << j.dump(2));
  CHECK(r.exit_code == 0);
  CHECK(j["policy"]["k8s"]["isolation"] == "runtimeclass");
  CHECK(j["policy"]["runtime"] == "k8s:lazyagent-nonet");
  CHECK(j["isolation_probe"]["egress"]["ran"] == true);
  CHECK(j["isolation_probe"]["egress"]["reached"].empty());
}

TEST_CASE("k8s: run --attempts 2 repairs: a wrong patch, its failure goes back to the planner Job, the fix passes",
          "[k8s]") {
  StubReply fix = reply(fixing_patch());
  // Refused (HTTP 400) unless the request carries the first attempt's failure.
  fix.require = {"Previous attempt 1 did not pass: tests failed", "still_failing: test_calculator.CalculatorTest.test_add"};
  Provider p({reply(wrong_patch()), fix});
  K8sClient k = client();
  CliResult r = p.run({"--attempts", "2"});
  const json j = json_out(r);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["stop_reason"] == "passed");
  REQUIRE(j["attempts"].size() == 2);
  CHECK(j["attempts"][0]["verdict"] == "failed");
  CHECK(j["attempts"][1]["verdict"] == "passed");
  CHECK(j["attempts"][0]["run_id"] != j["attempts"][1]["run_id"]);
  CHECK(j["category"] == "passed");
  CHECK(p.stub().requests() == 2);
  for (const auto& a : j["attempts"]) CHECK(leftovers(k, "io.lazyagent.run=" + a["run_id"].get<std::string>()) == 0);
}

TEST_CASE("k8s: SIGINT mid-run leaves no Job, pod or ConfigMap", "[k8s]") {
  StubReply slow = reply(fixing_patch());
  slow.delay_ms = 20000;  // the planner pod is waiting on the provider when ^C comes
  Provider p({slow});
  K8sClient k = client();
  TempDir out;
  const pid_t pid = spawn_cli(p.env(), {"run", "--backend", "k8s", "--config", p.config(), "--json"}, out.path());
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto pods = k.list(kK8sPods, kNs, "io.lazyagent.role=planner");
    REQUIRE(pods.ok());
    for (const auto& pod : pods->value("items", json::array())) {
      running = running || pod.value("/status/phase"_json_pointer, std::string()) == "Running";
    }
  }
  REQUIRE(running);
  ::kill(pid, SIGINT);
  const int code = wait_cli(pid, 120);
  CHECK(code == 130);
  CHECK(leftovers(k, "io.lazyagent.run") == 0);
}

TEST_CASE("k8s: a run's ConfigMap and NetworkPolicy are owned by its Job, and a SIGKILLed CLI's Job is "
          "collected by its TTL with them", "[k8s]") {
  // No reap, no CLI: the cluster's TTL controller deletes the finished Job,
  // its garbage collector the objects that name the Job as owner.
  Provider p({}, "  ttl_seconds_after_finished: 2\ntest_command: sleep 8 && python3 -m unittest -v\n");
  K8sClient k = client();
  TempDir out, dir;
  const std::string patch = dir.file("fix.json", fixing_patch());
  const pid_t pid = spawn_cli(p.env(), {"test", "--backend", "k8s", "--config", p.config(), "--patch", patch,
                                        "--no-baseline", "--json"}, out.path());
  std::string run;
  for (int i = 0; i < 600 && run.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto pods = k.list(kK8sPods, kNs, "io.lazyagent.role=sandbox,io.lazyagent.pid=" + std::to_string(pid));
    REQUIRE(pods.ok());
    for (const auto& pod : pods->value("items", json::array())) {
      if (pod.value("/status/phase"_json_pointer, std::string()) == "Running") {
        run = pod.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string());
      }
    }
  }
  REQUIRE_FALSE(run.empty());
  auto job = k.get(kK8sJobs, kNs, run + "-sandbox");
  REQUIRE(job.ok());
  REQUIRE(job->has_value());
  CHECK((**job)["spec"]["ttlSecondsAfterFinished"] == 2);
  const std::string uid = (**job)["metadata"]["uid"];
  for (const K8sKind* kind : {&kK8sConfigMaps, &kK8sNetworkPolicies}) {
    auto l = k.list(*kind, kNs, "io.lazyagent.run=" + run);
    REQUIRE(l.ok());
    REQUIRE(l->value("items", json::array()).size() == 1);
    const json owners = (*l)["items"][0]["metadata"]["ownerReferences"];
    INFO(owners.dump());
    REQUIRE(owners.size() == 1);
    CHECK(owners[0]["kind"] == "Job");
    CHECK(owners[0]["uid"] == uid);
  }
  ::kill(pid, SIGKILL);
  CHECK(wait_cli(pid, 30) == 128 + SIGKILL);
  CHECK(leftovers(k, "io.lazyagent.run=" + run) > 0);  // nothing of ours removed them
  std::size_t left = 1;
  for (int i = 0; i < 120 && left != 0; ++i) {  // the test's 8 s, the TTL's 2 s, the collectors' rounds
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    left = leftovers(k, "io.lazyagent.run=" + run);
  }
  CHECK(left == 0);
}

TEST_CASE("k8s: reap removes what a dead run left and keeps a live run's objects", "[k8s]") {
  K8sClient k = client();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  auto plant = [&](const std::string& run, long pid, const std::string& start) {
    const json labels = {{kLabelRun, run}, {kLabelRole, "sandbox"}, {kLabelOwner, std::to_string(getuid()) + "." + host},
                         {kLabelPid, std::to_string(pid)}, {kLabelPidStart, start}};
    REQUIRE(k.create(kK8sConfigMaps, kNs, {{"metadata", {{"name", run + "-seed"}, {"labels", labels}}}}).ok());
    const json job = {{"metadata", {{"name", run + "-sandbox"}, {"labels", labels}}},
                      {"spec", {{"backoffLimit", 0},
                                {"template", {{"metadata", {{"labels", labels}}},
                                              {"spec", {{"restartPolicy", "Never"},
                                                        {"containers", {{{"name", "c"}, {"image", "localhost/lazyagent-sandbox:latest"},
                                                                         {"imagePullPolicy", "Never"},
                                                                         {"command", {"sleep", "300"}}}}}}}}}}}};
    REQUIRE(k.create(kK8sJobs, kNs, job).ok());
  };
  const std::string dead = "r-planted-dead-" + std::to_string(getpid());
  const std::string live = "r-planted-live-" + std::to_string(getpid());
  plant(dead, 999999999, "1");
  std::ifstream stat("/proc/self/stat");
  std::string s;
  std::getline(stat, s);
  std::istringstream rest(s.substr(s.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) rest >> field;
  plant(live, getpid(), field);

  TempDir state;
  // The dead run's record, as a run killed with SIGKILL leaves it: still
  // "running", its owner gone (issue 19: reap closes it on this backend too).
  const RunStore store(state.path() + "/lazyagent-oci");
  REQUIRE(store.ensure().ok());
  json record = {{"run_id", dead}, {"status", "running"}, {"kind", "test"},
                 {"owner", {{"user_host", current_owner().user_host}, {"pid", 999999999}, {"start_time", "1"}}},
                 {"tests_passed", false}, {"test_exit_code", -1}, {"seed_sha256", ""}, {"patch_sha256", ""}};
  record["provenance"] = build_provenance(record);
  REQUIRE(store.write(record).ok());
  CliResult r = run_cli(CliEnv{state.path(), {{"KUBECONFIG", kubeconfig()}}}, {"reap", "--backend", "k8s", "--json"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["removed"].dump().find(dead) != std::string::npos);
  CHECK(j["left_running"].dump().find(live) != std::string::npos);
  CHECK(j["records_closed"] == json::array({dead}));
  const json closed = *store.read(dead);
  CHECK(closed["status"] == "interrupted");
  CHECK(closed["error"].get<std::string>().rfind("interrupted: the run's process (pid 999999999 on ", 0) == 0);
  for (int i = 0; i < 50 && leftovers(k, std::string(kLabelRun) + "=" + dead) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + dead) == 0);
  CHECK(count_with(k, kK8sConfigMaps, std::string(kLabelRun) + "=" + live) == 1);
  CliResult all = run_cli(CliEnv{state.path(), {{"KUBECONFIG", kubeconfig()}}}, {"reap", "--backend", "k8s", "--all"});
  CHECK(all.exit_code == 0);
  for (int i = 0; i < 50 && leftovers(k, std::string(kLabelRun) + "=" + live) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + live) == 0);
}

TEST_CASE("k8s: eval --backend k8s --jobs 2 gives each category in the same result files, resumes, leaves nothing", "[k8s]") {
  TempDir state, dir;
  const auto line = [](const std::string& id, const std::string& patch) {
    return "{\"id\":\"" + id + "\",\"seed\":\"" + seed_dir() + "\",\"patch\":" + patch + "}\n";
  };
  const std::string tasks = dir.file("tasks.jsonl", line("fix-1", fixing_patch()) + line("fix-2", fixing_patch()) +
                                                        line("wrong", wrong_patch()) +
                                                        line("refused", patch_json("test_calculator.py", "print('rigged')\n")));
  const std::string out = dir.path() + "/out";
  const CliEnv env{state.path(), {{"KUBECONFIG", kubeconfig()}}};
  CliResult r = run_cli(env, {"eval", tasks, "--backend", "k8s", "--jobs", "2", "--out", out, "--json"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const json s = json::parse(r.out, nullptr, false);
  REQUIRE(s.is_object());
  CHECK(s["total"] == 4);
  CHECK(s["passed"]["ids"] == json::array({"fix-1", "fix-2"}));
  CHECK(s["failed"]["ids"] == json::array({"wrong"}));
  CHECK(s["refused"]["ids"] == json::array({"refused"}));
  CHECK(s["infra_error"]["count"] == 0);
  CHECK(r.err.find("Kubernetes namespace " + kNs) != std::string::npos);
  K8sClient k = client();
  for (const auto& [id, category] : std::map<std::string, std::string>{
           {"fix-1", "passed"}, {"fix-2", "passed"}, {"wrong", "failed"}, {"refused", "refused"}}) {
    std::ifstream f(out + "/results/" + id + ".json");
    const json j = json::parse(f, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["eval"]["category"] == category);
    const std::string run = j["run_id"];
    CHECK(leftovers(k, "io.lazyagent.run=" + run) == 0);  // every object of the task's run is gone
    if (id != "refused") {
      CHECK(j["sandbox_id"].get<std::string>().rfind(kNs + "/", 0) == 0);  // a pod, not a container
      CHECK(j["isolation_probe"]["violations"].empty());
    }
  }
  // The same --out again: every verdict is kept, nothing runs.
  CliResult again = run_cli(env, {"eval", tasks, "--backend", "k8s", "--jobs", "2", "--out", out, "--json"});
  CHECK(again.exit_code == 0);
  CHECK(json::parse(again.out)["skipped"]["count"] == 4);
}

TEST_CASE("k8s: a unified diff against a git repository seed passes without .git or ignored "
          "files in the pod, diff RUN_ID round-trips, and a diff that does not apply is refused before any Job",
          "[k8s][diff]") {
  // A git work tree: the demo seed committed, an ignored build/ directory, an
  // untracked file that is not ignored. The test command proves what the pod got.
  TempDir repo_dir;
  const std::string repo = repo_dir.path() + "/project";
  sh("mkdir -p " + repo + "/build && cp " + seed_dir() + "/calculator.py " + seed_dir() + "/test_calculator.py " + repo +
     "/ && echo junk > " + repo + "/build/junk.o && printf 'build/\\n' > " + repo + "/.gitignore && echo notes > " +
     repo + "/notes.txt");
  REQUIRE(sh("cd " + repo + " && git init -q && git add calculator.py test_calculator.py .gitignore && "
             "git -c user.name=it -c user.email=it@example.invalid commit -q -m seed && echo ok") == "ok\n");
  // git's own diff of the one-line fix to add (subtract keeps its "a - b").
  const std::string fix = sh("cd " + repo + " && sed -i '0,/return a - b/s//return a + b/' calculator.py && "
                             "git diff && git checkout -q calculator.py");
  REQUIRE(fix.rfind("diff --git a/calculator.py b/calculator.py\n", 0) == 0);
  const std::string extra =
      "test_command: test ! -e .git && test ! -e build && test -e notes.txt && python3 -m unittest -v\n";
  // `test`: the orchestrator (this build) reads, applies and proves the diff;
  // `run` would ask the cluster's planner image, which is the shared one
  // (rebuilt by scripts/build-images.sh), so the planner's side of diffs is
  // proven on podman (real_project_test.cpp) with this build's binary.
  Provider p({}, extra, repo);
  K8sClient k = client();
  TempDir io;
  CliResult r = p.cli({"test", "--backend", "k8s", "--config", p.config(), "--patch", io.file("fix.diff", fix),
                       "--no-baseline", "--json"});
  const json j = json_out(r);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["patch_format"] == "diff");
  CHECK(j["diff_stats"]["added"] == 1);
  CHECK(j["diff_stats"]["removed"] == 1);
  CHECK(j["changed_paths"] == json::array({"calculator.py"}));
  CHECK(j["seed_source"]["kind"] == "git");
  CHECK(j["seed_source"]["files"] == 4);  // calculator.py, test_calculator.py, .gitignore, notes.txt
  CHECK(j["sandbox_id"].get<std::string>().rfind("default/", 0) == 0);
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + j["run_id"].get<std::string>()) == 0);
  // The proven change out: the same diff, applied by git to the seed.
  CliResult d = p.cli({"diff", j["run_id"].get<std::string>()});
  INFO(d.err);
  CHECK(d.exit_code == 0);
  CHECK(d.out.find("-    return a - b\n+    return a + b\n") != std::string::npos);
  TempDir out;
  CHECK(sh("cd " + repo + " && git apply --check " + out.file("proven.diff", d.out) + " && echo applies") ==
        "applies\n");
  CliResult v = p.cli({"verify", j["run_id"].get<std::string>(), "--json"});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);

  // A diff whose context is not in the file: refused naming the file and hunk, no Job made.
  std::string stale = fix;
  stale.replace(stale.find("return a - b"), 12, "return a * b");
  Recorder jobs(kK8sJobs, "io.lazyagent.role");
  CliResult t = p.cli({"test", "--backend", "k8s", "--seed", repo, "--config", p.config(), "--patch",
                       io.file("stale.diff", stale), "--no-baseline", "--json"});
  const json tj = json_out(t);
  CHECK(t.exit_code == 4);
  REQUIRE(tj["findings"].size() == 1);
  CHECK(tj["findings"][0]["code"] == "hunk_does_not_apply");
  CHECK(tj["findings"][0]["path"] == "calculator.py");
  for (const auto& job : jobs.stop()) {
    CHECK(job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != tj["run_id"].get<std::string>());
  }
}

TEST_CASE("k8s: after the suite nothing of ours remains but provider Secrets", "[k8s][zz-last]") {
  K8sClient k = client();
  CHECK(DropPodEgress::rules_left() == 0);
  CHECK(leftovers(k, "io.lazyagent.run") == 0);
  auto secrets = k.list(kK8sSecrets, kNs, "io.lazyagent.role");
  REQUIRE(secrets.ok());
  for (const auto& s : secrets->value("items", json::array())) {
    CHECK(s.value("/metadata/labels/io.lazyagent.role"_json_pointer, std::string()) == "provider-secret");
  }
}

TEST_CASE("k8s: planner_egress with the node dropping all but the provider (an enforcing CNI): the probe in the "
          "planner pod states it enforced, the run passes, the policy is deleted with the run", "[k8s]") {
  Provider p({reply(fixing_patch())}, "  planner_egress: ['%PROVIDER%']\n  planner_egress_required: true\n");
  K8sClient k = client();
  Recorder policies(kK8sNetworkPolicies, "io.lazyagent.role=planner");
  json j;
  std::string err;
  {
    DropPodEgress drop(p.provider_address());
    REQUIRE(DropPodEgress::rules_left() == 3);
    CliResult r = p.run();
    err = r.err;
    j = json_out(r);
    INFO(r.err << j.dump(2));
    CHECK(r.exit_code == 0);
  }
  CHECK(DropPodEgress::rules_left() == 0);
  INFO(err << j.dump(2));
  CHECK(j["status"] == "passed");
  REQUIRE(j.contains("planner"));
  const json pe = j["planner"].value("planner_egress", json::object());
  CHECK(pe["state"] == "enforced");
  CHECK(pe["ran"] == true);
  CHECK(pe["findings"].empty());
  CHECK(pe["allowed"] == json::array({p.provider_address()}));
  CHECK(pe["attempts"].size() > 5);  // the gateway, the API server, the external addresses: all tried
  CHECK(pe["ms"].get<long>() >= 900);   // dropped attempts wait out their 1 s bound
  CHECK(j["planner"]["ms"].get<long>() > pe["ms"].get<long>());  // the planner's whole time, probe included
  // The policy existed, allowed only the provider, and is gone with the run.
  const auto seen = policies.stop();  // its events: added, deleted
  REQUIRE_FALSE(seen.empty());
  CHECK(seen[0]["metadata"]["ownerReferences"][0]["kind"] == "Job");
  const json egress = seen[0]["spec"]["egress"];
  REQUIRE(egress.size() == 1);
  CHECK(egress[0]["to"][0]["ipBlock"]["cidr"] == host_ip() + "/32");
  CHECK(leftovers(k, "io.lazyagent.run") == 0);
}

TEST_CASE("k8s: planner_egress on the bridge CNI, which does not enforce it: stated not enforced with the probe's "
          "findings, refused before the provider is called when required", "[k8s]") {
  {
    Provider p({reply(fixing_patch())}, "  planner_egress: ['%PROVIDER%']\n");
    CliResult r = p.run();
    const json j = json_out(r);
    INFO(r.err << j.dump(2));
    CHECK(r.exit_code == 0);
    REQUIRE(j.contains("planner"));
    const json pe = j["planner"].value("planner_egress", json::object());
    CHECK(pe["state"] == "not enforced");
    CHECK(pe["findings"].dump().find("reached gateway tcp " + host_ip()) != std::string::npos);
  }
  Provider p({reply(fixing_patch())}, "  planner_egress: ['%PROVIDER%']\n  planner_egress_required: true\n");
  K8sClient k = client();
  CliResult r = p.run();
  const json j = json_out(r);
  INFO(r.err << j.dump(2));
  CHECK(r.exit_code != 0);
  CHECK(j.dump().find("k8s.planner_egress_required: the planner pod's egress policy is not enforced") !=
        std::string::npos);
  CHECK(p.stub().requests() == 0);  // the provider was never called
  CHECK(leftovers(k, "io.lazyagent.run") == 0);
}
