// Environments on the real local cluster (issue 32 item 2): a corpus
// project's `environment:` built by the local podman exactly as on podman,
// pushed once to the cluster's registry (scripts/k8s-registry.sh) and
// pulled by the sandbox pod by digest; the bug's fix proven against its
// baseline through `test --backend k8s`, a wrong fix failing.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../corpus/corpus_projects.h"
#include "harness.h"
#include "k8s_registry_support.h"
#include "engine/k8s/k8s_environments.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;

namespace {

void prove_on_k8s(const corpus::CorpusProject& p) {
  corpus::Prepared prep;
  corpus::prepare(p, &prep);
  const std::string reg = k8sreg::registry_address();
  const std::string config = prep.dir.file(
      "corpus.yaml", "seed: " + prep.repo + "\n" + p.config + "k8s:\n  registry: " + reg +
                         "\n  registry_plain_http: true\n");
  CliEnv env{prep.dir.path() + "/state", {{"KUBECONFIG", k8sreg::reg_kubeconfig()}}};

  // The environment on podman (built here on first use, else reused): the reference.
  const auto built = run_cli(env, {"env", "build", "--config", config, "--json"}, 900);
  INFO(built.err.substr(built.err.size() > 4000 ? built.err.size() - 4000 : 0));
  REQUIRE(built.exit_code == 0);
  const json local = json_out(built);
  const std::string key = local["key"];
  REQUIRE(key.size() == 32);
  CHECK_FALSE(local.contains("registry"));  // podman's own: no registry

  // Not in the registry yet (a registry kept from an earlier run: its manifest deleted), so the first run pushes.
  RegistryClient r = k8sreg::registry();
  auto had = r.manifest_digest(kEnvironmentRegistryRepo, key, kImageManifestTypes);
  REQUIRE(had.ok());
  if (*had) REQUIRE(r.delete_manifest(kEnvironmentRegistryRepo, **had).ok());

  k8sreg::JobRecorder jobs;
  const auto good = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", prep.fix_file, "--json",
                                  "--timeout", "400"},
                            900);
  INFO(good.err.substr(good.err.size() > 6000 ? good.err.size() - 6000 : 0));
  REQUIRE(good.exit_code == 0);
  const json g = json_out(good);
  CHECK(g["status"] == "passed");
  CHECK(g["triage"]["baseline"]["tests_passed"] == false);
  CHECK(corpus::sorted_strings(g["triage"]["fixed"]) == p.fixed);
  CHECK(g["triage"]["newly_broken"].empty());
  CHECK(g["triage"]["still_failing"].empty());
  // The same environment as on podman: key, image and digest.
  const json e = g["environment"];
  CHECK(e["key"] == key);
  CHECK(e["image"] == local["image"]);
  CHECK(e["digest"] == local["digest"]);
  CHECK(e["built"] == false);
  // Pushed once, pinned by digest: the pod ran that image.
  const json reg_e = e["registry"];
  INFO(reg_e.dump());
  CHECK(reg_e["pushed"] == true);
  CHECK(reg_e["tag"] == reg + "/lazyagent-env:" + key);
  const std::string digest = reg_e["digest"];
  REQUIRE(digest.rfind("sha256:", 0) == 0);
  CHECK(reg_e["image"] == reg + "/lazyagent-env@" + digest);
  CHECK(g["image"] == reg_e["image"]);
  CHECK(g["image_digest"].get<std::string>().find(digest) != std::string::npos);
  // The registry's manifest by that digest hashes to it and is the local image's config.
  auto now = r.manifest_digest(kEnvironmentRegistryRepo, key, kImageManifestTypes);
  REQUIRE(now.ok());
  REQUIRE(now->has_value());
  CHECK(**now == digest);
  // Every sandbox Job of the two runs (baseline, fix), as the API server stored it, names the image by digest.
  int named = 0;
  for (const auto& job : jobs.stop()) {
    const std::string run = job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string());
    if (run != g["run_id"] && run != g["triage"]["baseline"]["run_id"]) continue;
    CHECK(job["spec"]["template"]["spec"]["containers"][0]["image"] == reg_e["image"]);
    ++named;
  }
  CHECK(named >= 2);
  K8sClient k = k8sreg::reg_client();
  CHECK(k8sreg::run_leftovers(k, g["run_id"]) == 0);
  CHECK(k8sreg::run_leftovers(k, g["triage"]["baseline"]["run_id"]) == 0);

  // The wrong fix: the registry has the environment (a HEAD says so): no push, the same digest; its tests fail.
  const auto bad = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", prep.wrong_file, "--json",
                                 "--timeout", "400"},
                           900);
  INFO(bad.err.substr(bad.err.size() > 6000 ? bad.err.size() - 6000 : 0));
  CHECK(bad.exit_code == 1);
  const json w = json_out(bad);
  CHECK(w["status"] == "failed");
  CHECK(w["environment"]["key"] == key);
  CHECK(w["environment"]["digest"] == local["digest"]);
  CHECK(w["environment"]["registry"]["pushed"] == false);
  CHECK(w["environment"]["registry"]["push_ms"] == 0);
  CHECK(w["environment"]["registry"]["digest"] == digest);
  CHECK(w["triage"]["fixed"].empty());
  CHECK(corpus::sorted_strings(w["triage"]["still_failing"]) == p.fixed);
  CHECK(k8sreg::run_leftovers(k, w["run_id"]) == 0);

  // `env list --backend k8s` names it in the registry.
  const auto listed = run_cli(env, {"env", "list", "--backend", "k8s", "--config", config, "--json"});
  REQUIRE(listed.exit_code == 0);
  bool found = false;
  const json rows = json_out(listed)["environments"];
  for (const auto& row : rows) {
    if (row["key"] == key) found = row["registry"] == reg + "/lazyagent-env:" + key + "@" + digest;
  }
  CHECK(found);
  WARN(p.package << " on k8s: environment " << key << " pushed in " << reg_e["push_ms"] << " ms (" << digest
                 << "); fix run " << g["timings"].dump() << "; the second run did not push");
}

}  // namespace

TEST_CASE("k8s environment: python-ordered-set with its pytest environment, pushed once and pulled by digest, the "
          "fix proven, a wrong fix fails",
          "[k8s][registry][environment]") {
  prove_on_k8s(corpus::ordered_set_project());
}

// cJSON: a C project built by cmake/make in $TMPDIR and tested by ctest, in a
// 450 MB environment (cmake, make, gcc). Under the cluster's gVisor runtime it
// needs the seccomp names and clone3 as runc reads them and room in the pod's
// pids cgroup for the Sentry (scripts/runsc-nonet.py, k8s-cluster.sh's
// podPidsLimit): without either its build fails in the pod.
TEST_CASE("k8s environment: cJSON with its cmake/gcc environment, built and tested in the pod, the fix proven, a "
          "wrong fix fails",
          "[k8s][registry][environment]") {
  prove_on_k8s(corpus::cjson_project());
}
