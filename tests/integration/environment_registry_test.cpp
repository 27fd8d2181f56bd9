// An environment for the Kubernetes backend (engine/k8s/k8s_environments.h)
// without the cluster: `env build --backend k8s` builds it with the local
// podman service, as on podman, and pushes it to k8s.registry (a private
// scripts/k8s-registry.sh instance on its own port and storage, stopped at
// the end). The kubeconfig names no reachable server: building and pushing
// never talks to the cluster.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "harness.h"
#include "unreachable_kubeconfig.h"

using nlohmann::json;
using namespace it;

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A registry of its own (port, storage), stopped and removed when done.
class PrivateRegistry {
 public:
  PrivateRegistry() {
    env_ = "LAZYAGENT_K8S_REGISTRY_PORT=" + std::to_string(25600 + getpid() % 300) +
           " LAZYAGENT_K8S_REGISTRY_STATE=" + dir_.path() + "/registry ";
    address_ = trim(sh(env_ + std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh start 2>/dev/null"));
  }
  ~PrivateRegistry() { sh(env_ + std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh stop >/dev/null 2>&1"); }
  const std::string& address() const { return address_; }
  // The registry's answer for the manifest tag/digest `ref` of lazyagent-env (HEAD): its digest, or "".
  std::string digest_of(const std::string& ref) const {
    return trim(sh("curl -fsI -H 'Accept: application/vnd.oci.image.manifest.v1+json, "
                   "application/vnd.docker.distribution.manifest.v2+json' http://" +
                   address_ + "/v2/lazyagent-env/manifests/" + ref +
                   " 2>/dev/null | tr -d '\\r' | sed -n 's/^Docker-Content-Digest: //Ip'"));
  }
  std::string config_of(const std::string& ref) const {
    const json m = json::parse(sh("curl -fs -H 'Accept: application/vnd.oci.image.manifest.v1+json, "
                                  "application/vnd.docker.distribution.manifest.v2+json' http://" +
                                  address_ + "/v2/lazyagent-env/manifests/" + ref),
                               nullptr, false);
    return m.is_object() ? m.value("/config/digest"_json_pointer, std::string()) : std::string();
  }

 private:
  TempDir dir_;
  std::string env_, address_;
};

}  // namespace

TEST_CASE("environment registry: env build --backend k8s builds as on podman, pushes once by key, verifies by "
          "digest, pushes over a moved tag",
          "[environment][registry]") {
  PrivateRegistry reg;
  REQUIRE_FALSE(reg.address().empty());
  TempDir dir;
  const std::string kubeconfig = unreachable_kubeconfig(dir);
  const std::string config = dir.file(
      "c.yaml", "seed: " + seed_dir() +
                    "\nenvironment:\n  setup: [\"echo lazyagent environment registry test > marker\"]\n"
                    "k8s:\n  registry: " +
                    reg.address() + "\n  registry_plain_http: true\n");
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", kubeconfig}}};

  const auto local = run_cli(env, {"env", "build", "--config", config, "--json"}, 600);
  INFO(local.err);
  REQUIRE(local.exit_code == 0);
  const json l = json_out(local);
  const std::string key = l["key"], image = l["image"];
  struct Cleanup {
    std::string image;
    ~Cleanup() { sh("podman rmi -f " + image + " >/dev/null 2>&1"); }
  } cleanup{image};

  const auto first = run_cli(env, {"env", "build", "--backend", "k8s", "--config", config, "--json"}, 600);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const json f = json_out(first);
  CHECK(f["key"] == key);
  CHECK(f["image"] == image);
  CHECK(f["digest"] == l["digest"]);  // the same local image as podman's
  CHECK(f["built"] == false);
  REQUIRE(f.contains("registry"));
  CHECK(f["registry"]["pushed"] == true);
  CHECK(f["registry"]["push_ms"].get<long>() > 0);
  const std::string digest = f["registry"]["digest"];
  CHECK(f["registry"]["tag"] == reg.address() + "/lazyagent-env:" + key);
  CHECK(f["registry"]["image"] == reg.address() + "/lazyagent-env@" + digest);
  CHECK(reg.digest_of(key) == digest);
  // The registry's config is the local image's: its digest is the image id.
  const std::string id = trim(sh("podman image inspect --format '{{.Id}}' " + image));
  CHECK(reg.config_of(digest) == "sha256:" + id);

  // Content-addressed by key: the second build finds it (a HEAD) and pushes nothing.
  const auto second = run_cli(env, {"env", "build", "--backend", "k8s", "--config", config, "--json"}, 600);
  REQUIRE(second.exit_code == 0);
  const json s = json_out(second);
  CHECK(s["registry"]["pushed"] == false);
  CHECK(s["registry"]["push_ms"] == 0);
  CHECK(s["registry"]["digest"] == digest);
  CHECK(second.err.find("not pushed") != std::string::npos);

  // The tag moved to another image (the stock sandbox image): its config is not ours, so it is pushed over.
  const std::string moved = sh("curl -s -o /dev/null -w '%{http_code}' -X POST --unix-socket /run/podman/podman.sock "
                               "'http://d/v4.0.0/libpod/images/localhost%2Flazyagent-sandbox%3Alatest/push?"
                               "destination=" +
                               reg.address() + "%2Flazyagent-env%3A" + key + "&tlsVerify=false'");
  REQUIRE(moved == "200");
  REQUIRE(reg.digest_of(key) != digest);
  const auto third = run_cli(env, {"env", "build", "--backend", "k8s", "--config", config, "--json"}, 600);
  INFO(third.err);
  REQUIRE(third.exit_code == 0);
  const json t = json_out(third);
  CHECK(t["registry"]["pushed"] == true);
  CHECK(reg.config_of(t["registry"]["digest"]) == "sha256:" + id);
  CHECK(reg.digest_of(key) == t["registry"]["digest"].get<std::string>());

  // `env list --backend k8s`: the local image with where it is in the registry.
  const auto listed = run_cli(env, {"env", "list", "--backend", "k8s", "--config", config, "--json"});
  INFO(listed.err);
  REQUIRE(listed.exit_code == 0);
  bool found = false;
  const json rows = json_out(listed)["environments"];
  for (const auto& row : rows) {
    if (row["key"] == key) {
      found = true;
      CHECK(row["registry"] == reg.address() + "/lazyagent-env:" + key + "@" + t["registry"]["digest"].get<std::string>());
    }
  }
  CHECK(found);
  WARN("environment registry: first push " << f["registry"]["push_ms"] << " ms, second build no push, push over a "
                                           "moved tag "
                                           << t["registry"]["push_ms"] << " ms");
}

TEST_CASE("environment registry: --backend k8s without k8s.registry refuses an environment, naming what to set",
          "[environment][registry][quick]") {
  TempDir dir;
  const std::string kubeconfig = dir.file("kubeconfig", R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: none}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  const std::string config =
      dir.file("c.yaml", "seed: " + seed_dir() + "\nenvironment:\n  setup: [\"true\"]\n");
  CliEnv env{dir.path() + "/state", {{"KUBECONFIG", kubeconfig}}};
  const auto r = run_cli(env, {"env", "build", "--backend", "k8s", "--config", config, "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK((r.out + r.err).find("needs k8s.registry") != std::string::npos);
}
