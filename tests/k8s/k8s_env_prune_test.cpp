// `env prune --backend k8s` (issue 32): the environments' copies in the
// cluster's registry go with the local images, by digest, except the
// config's own (unless --all); a registry-only copy goes too; with the
// registry unreachable it fails, saying so, and removes nothing.
//
// prune removes every environment image but the config's own, on the podman
// service it is given, so the test gives it one of its own: a podman service
// on its own storage (vfs: no mounts), with only the base image copied in.
// The machine's environment images (the corpus's, other runs') are never
// seen. The cluster's registry is shared with the other k8s tests of the
// session: their copies may go too (they push again when they need them), so
// the checks name this test's two keys only.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <algorithm>

#include "harness.h"
#include "own_podman.h"
#include "k8s_registry_support.h"
#include "engine/k8s/k8s_environments.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;

namespace {

const std::string kBase = "localhost/lazyagent-base:bookworm";

// The registry's answer to a GET of the environment manifest `digest`, through its HTTP API.
std::string manifest_status(const std::string& reg, const std::string& digest) {
  return sh("curl -s -o /dev/null -w '%{http_code}' -H 'Accept: " + std::string(kImageManifestTypes) + "' http://" +
            reg + "/v2/" + kEnvironmentRegistryRepo + "/manifests/" + digest);
}

// `env build --backend k8s --json`: built by the test's podman, pushed; its key and registry digest.
struct Built {
  std::string key, image, digest;
};
Built build(const CliEnv& env, const std::string& config, const std::string& reg) {
  const auto r = run_cli(env, {"env", "build", "--backend", "k8s", "--config", config, "--json"}, 300);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json_out(r);
  INFO(j.dump());
  Built b{j["key"], j["image"], j["registry"]["digest"]};
  CHECK(j["registry"]["pushed"] == true);
  CHECK(j["registry"]["tag"] == reg + "/lazyagent-env:" + b.key);
  REQUIRE(b.digest.rfind("sha256:", 0) == 0);
  CHECK(manifest_status(reg, b.digest) == "200");
  return b;
}

json prune(const CliEnv& env, const std::string& config, bool all, int want_exit = 0) {
  std::vector<std::string> args = {"env", "prune", "--backend", "k8s", "--config", config, "--json"};
  if (all) args.push_back("--all");
  const auto r = run_cli(env, args, 120);
  INFO(r.out << r.err);
  CHECK(r.exit_code == want_exit);
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  return j;
}

bool names(const json& list, const std::string& what) {
  for (const auto& x : list) {
    if (x.is_string() && x.get<std::string>() == what) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("k8s env prune: the registry's copies go with the local images by digest, the config's own is kept "
          "unless --all, a registry-only copy goes, an unreachable registry removes nothing",
          "[k8s][registry][environment][prune]") {
  OwnPodman own;
  TempDir dir;
  const std::string seed = dir.path() + "/seed";
  REQUIRE(sh("mkdir -p " + seed + " && echo hello > " + seed + "/hello.txt; echo $?") == "0\n");
  const std::string reg = k8sreg::registry_address();
  // Two small environments on the base image, with no network: keys of their own.
  const auto config = [&](const std::string& name, const std::string& marker, const std::string& registry) {
    return dir.file(name, "seed: " + seed + "\ntest_command: \"test -f /opt/" + marker +
                              "\"\nenvironment:\n  base: " + kBase + "\n  network: none\n  setup: [\"echo " + marker +
                              " > /opt/" + marker + "\"]\nk8s:\n  registry: " + registry +
                              "\n  registry_plain_http: true\n");
  };
  const std::string config_a = config("a.yaml", "prune-it-one-" + std::to_string(getpid()), reg);
  const std::string config_b = config("b.yaml", "prune-it-two-" + std::to_string(getpid()), reg);
  const CliEnv env{dir.path() + "/state",
                   {{"KUBECONFIG", k8sreg::reg_kubeconfig()}, {"CONTAINER_HOST", own.container_host()}}};

  const Built a = build(env, config_a, reg);
  const Built b = build(env, config_b, reg);
  REQUIRE(a.key != b.key);
  REQUIRE(a.digest != b.digest);
  CHECK(own.has(a.image));
  CHECK(own.has(b.image));
  CHECK_FALSE(sh("podman image exists " + a.image + "; echo $?") == "0\n");  // not on the machine's podman

  SECTION("an unreachable registry: a clear error, nothing removed") {
    // The same environment as a's, with a registry nothing listens on.
    const std::string dead = config("dead.yaml", "prune-it-one-" + std::to_string(getpid()), "127.0.0.1:1");
    const auto r = run_cli(env, {"env", "prune", "--backend", "k8s", "--config", dead, "--json"}, 120);
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    const json j = json::parse(r.out, nullptr, false);
    REQUIRE(j.is_object());
    CHECK_FALSE(j.contains("removed"));
    const std::string error = j.value("error", std::string());
    CHECK(error.find("127.0.0.1:1") != std::string::npos);  // names the registry it could not reach
    WARN("env prune --backend k8s, the registry unreachable: exit " << r.exit_code << ": " << error);
    CHECK(own.has(a.image));
    CHECK(own.has(b.image));
    CHECK(manifest_status(reg, a.digest) == "200");
    CHECK(manifest_status(reg, b.digest) == "200");
    REQUIRE(prune(env, config_a, true)["failed"].empty());  // clean up
  }

  SECTION("prune keeps the config's own, removes the other and its registry copy; --all removes both") {
    const json p = prune(env, config_a, false);
    INFO(p.dump());
    CHECK(names(p["removed"], b.image));
    CHECK_FALSE(names(p["removed"], a.image));
    CHECK(p["kept"] == json::array({a.image}));
    CHECK(p["failed"].empty());
    CHECK(manifest_status(reg, b.digest) == "404");  // the registry's manifest, by digest
    CHECK(manifest_status(reg, a.digest) == "200");
    RegistryClient r = k8sreg::registry();
    auto tags = r.tags(kEnvironmentRegistryRepo);
    REQUIRE(tags.ok());
    CHECK(std::count(tags->begin(), tags->end(), b.key) == 0);
    CHECK(std::count(tags->begin(), tags->end(), a.key) == 1);
    CHECK_FALSE(own.has(b.image));
    CHECK(own.has(a.image));

    // b again, pushed again, then its local image removed: a registry-only copy, which `env list` shows.
    const Built b2 = build(env, config_b, reg);
    CHECK(b2.key == b.key);
    REQUIRE(sh(own.podman + " rmi " + b2.image + " >/dev/null 2>&1; echo $?") == "0\n");
    const auto listed = run_cli(env, {"env", "list", "--backend", "k8s", "--config", config_a, "--json"});
    INFO(listed.out << listed.err);
    REQUIRE(listed.exit_code == 0);
    bool registry_only = false;
    const json listing = json_out(listed);
    for (const auto& row : listing["environments"]) {
      if (row["key"] == b.key) registry_only = row["id"] == reg + "/lazyagent-env@" + b2.digest;
    }
    INFO(b2.digest);
    CHECK(registry_only);

    const json all = prune(env, config_a, true);
    INFO(all.dump());
    CHECK(names(all["removed"], a.image));
    CHECK(names(all["removed"], reg + "/lazyagent-env:" + b.key));
    CHECK(all["kept"].empty());
    CHECK(all["failed"].empty());
    CHECK(manifest_status(reg, a.digest) == "404");
    CHECK(manifest_status(reg, b2.digest) == "404");
    CHECK_FALSE(own.has(a.image));
    CHECK(k8sreg::trimmed(sh(own.podman + " images -q --filter label=io.lazyagent.env.key")).empty());
  }
}
