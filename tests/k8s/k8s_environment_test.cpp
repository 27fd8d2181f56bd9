// Environments on the real local cluster (issue 32 item 2): a corpus
// project's `environment:` built by the local podman exactly as on podman,
// pushed once to the cluster's registry (scripts/k8s-registry.sh) and
// pulled by the sandbox pod by digest; the bug's fix proven against its
// baseline through `test --backend k8s`, a wrong fix failing; and `run`
// (the planner pod, the scripted provider) and `eval --jobs 2` with the
// environment, judged as on podman, naming the same environment.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <set>

#include "../corpus/corpus_projects.h"
#include "harness.h"
#include "k8s_registry_support.h"
#include "engine/k8s/k8s_environments.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;
using k8sreg::eval_on;
using k8sreg::prediction;
using k8sreg::result_of;

namespace {

// `env build --json` on podman (built on first use, else reused): the reference environment.
json podman_environment(const CliEnv& env, const std::string& config) {
  const auto built = run_cli(env, {"env", "build", "--config", config, "--json"}, 900);
  INFO(built.err.substr(built.err.size() > 4000 ? built.err.size() - 4000 : 0));
  REQUIRE(built.exit_code == 0);
  json local = json_out(built);
  REQUIRE(local["key"].get<std::string>().size() == 32);
  return local;
}

// full: the fix proven against its baseline (the triage), then the wrong fix
// failing, as on podman. Otherwise one sandbox pod: the fix alone with
// --no-baseline, for a project whose build in the pod is the mechanism under
// test (cJSON under gVisor: each pod run is a full cmake build, ~2 min here;
// its triage and wrong fix are proven on podman by the corpus tests, and both
// verdicts on the cluster by python-ordered-set's full case).
void prove_on_k8s(const corpus::CorpusProject& p, bool full) {
  corpus::Prepared prep;
  corpus::prepare(p, &prep);
  const std::string reg = k8sreg::registry_address();
  const std::string config = prep.dir.file(
      "corpus.yaml", "seed: " + prep.repo + "\n" + p.config + "k8s:\n  registry: " + reg +
                         "\n  registry_plain_http: true\n");
  CliEnv env{prep.dir.path() + "/state", {{"KUBECONFIG", k8sreg::reg_kubeconfig()}}};

  // The environment on podman (built here on first use, else reused): the reference.
  const json local = podman_environment(env, config);
  const std::string key = local["key"];
  CHECK_FALSE(local.contains("registry"));  // podman's own: no registry

  // Not in the registry yet (a registry kept from an earlier run: its manifest deleted), so the first run pushes.
  RegistryClient r = k8sreg::registry();
  auto had = r.manifest_digest(kEnvironmentRegistryRepo, key, kImageManifestTypes);
  REQUIRE(had.ok());
  if (*had) REQUIRE(r.delete_manifest(kEnvironmentRegistryRepo, **had).ok());

  k8sreg::JobRecorder jobs;
  json g;
  if (full) {
    g = k8sreg::prove_fix_on_k8s(env, config, prep.fix_file, p.fixed).result;
    CHECK(g["triage"]["newly_broken"].empty());
    CHECK(g["triage"]["still_failing"].empty());
  } else {
    const auto fix = run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", prep.fix_file,
                                   "--no-baseline", "--json", "--timeout", "400"},
                             900);
    INFO(fix.err.substr(fix.err.size() > 6000 ? fix.err.size() - 6000 : 0));
    REQUIRE(fix.exit_code == 0);
    g = json_out(fix);
    CHECK(g["status"] == "passed");
    CHECK(g["runner"]["tests_run"].get<long>() >= static_cast<long>(p.fixed.size()));
    CHECK(g["runner"]["failed"] == 0);
  }
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
    if (run != g["run_id"].get<std::string>() &&
        (!full || run != g["triage"]["baseline"]["run_id"].get<std::string>()))
      continue;
    CHECK(job["spec"]["template"]["spec"]["containers"][0]["image"] == reg_e["image"]);
    ++named;
  }
  CHECK(named >= (full ? 2 : 1));
  K8sClient k = k8sreg::reg_client();
  CHECK(k8sreg::run_leftovers(k, g["run_id"]) == 0);
  if (full) CHECK(k8sreg::run_leftovers(k, g["triage"]["baseline"]["run_id"]) == 0);

  if (full) {
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
  }

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
  prove_on_k8s(corpus::ordered_set_project(), true);
}

// cJSON: a C project built by cmake/make in $TMPDIR and tested by ctest, in a
// 450 MB environment (cmake, make, gcc). Under the cluster's gVisor runtime it
// needs the seccomp names and clone3 as runc reads them and room in the pod's
// pids cgroup for the Sentry (scripts/runsc-nonet.py, k8s-cluster.sh's
// podPidsLimit): without either its build fails in the pod.
TEST_CASE("k8s environment: cJSON with its cmake/gcc environment, built and tested in one gVisor pod, the fix "
          "passes",
          "[k8s][registry][environment]") {
  prove_on_k8s(corpus::cjson_project(), false);
}

// `run` (the planner pod asking the scripted provider, the sandbox pods on the
// environment's image) and `eval --jobs 2` on the cluster, with the same
// environment as on podman: the planner's fix passes with its triage; of the
// predictions, the fix passes and the wrong fix fails, as `eval` on podman
// judges them, each result naming the same environment key, image and digest
// as podman's results do (plus the registry's copy, pulled by digest).
TEST_CASE("k8s environment: run and eval --jobs 2 with python-ordered-set's environment, the fix passes and a wrong "
          "fix fails as on podman, the same environment key and digest in every result",
          "[k8s][registry][environment][eval]") {
  const corpus::CorpusProject p = corpus::ordered_set_project();
  corpus::Prepared prep;
  corpus::prepare(p, &prep);
  const std::string reg = k8sreg::registry_address();
  const std::string k8s_yaml = "  registry: " + reg + "\n  registry_plain_http: true\n";
  const std::string config = prep.dir.file("corpus.yaml", "seed: " + prep.repo + "\n" + p.config + "k8s:\n" + k8s_yaml);
  const CliEnv env{prep.dir.path() + "/state", {{"KUBECONFIG", k8sreg::reg_kubeconfig()}}};

  // The environment on podman: the reference.
  const json local = podman_environment(env, config);
  const std::string key = local["key"];

  // eval of the same two predictions on podman, then on the cluster.
  const std::string preds = prep.dir.file("preds.jsonl", prediction("oset-fix", prep.fix) +
                                                             prediction("oset-wrong", prep.wrong));
  const std::string map = prep.dir.file("seeds.json", json{{"oset-fix", prep.repo}, {"oset-wrong", prep.repo}}.dump());
  const std::string out_podman = prep.dir.path() + "/out-podman", out_k8s = prep.dir.path() + "/out-k8s";
  json sp = eval_on(env, "podman", preds, map, config, out_podman);
  k8sreg::JobRecorder jobs;
  json sk = eval_on(env, "k8s", preds, map, config, out_k8s);
  CHECK(sp["passed"]["ids"] == json({"oset-fix"}));
  CHECK(sp["failed"]["ids"] == json({"oset-wrong"}));
  for (const char* category : {"passed", "failed", "refused", "infra_error", "isolation_violation"}) {
    INFO(category);
    CHECK(sk[category]["ids"] == sp[category]["ids"]);
  }
  std::string registry_digest;
  for (const char* id : {"oset-fix", "oset-wrong"}) {
    INFO(id);
    json rp = result_of(out_podman, id), rk = result_of(out_k8s, id);
    CHECK(rk["status"] == rp["status"]);
    CHECK(rk["tests_passed"] == rp["tests_passed"]);
    CHECK(corpus::sorted_strings(rk["triage"]["fixed"]) == corpus::sorted_strings(rp["triage"]["fixed"]));
    CHECK(corpus::sorted_strings(rk["triage"]["still_failing"]) ==
          corpus::sorted_strings(rp["triage"]["still_failing"]));
    // The same environment: podman's own image, the cluster's the registry's copy of it by digest.
    json ep = rp["environment"], ek = rk["environment"];
    INFO(ep.dump() << "\n" << ek.dump());
    CHECK(ep["key"] == key);
    CHECK(ep["digest"] == local["digest"]);
    CHECK(ep["image"] == local["image"]);
    CHECK_FALSE(ep.contains("registry"));
    CHECK(ek["key"] == key);
    CHECK(ek["digest"] == local["digest"]);
    CHECK(ek["image"] == local["image"]);
    json re = ek["registry"];
    REQUIRE(re.is_object());
    CHECK(re["tag"] == reg + "/lazyagent-env:" + key);
    const std::string d = re["digest"];
    REQUIRE(d.rfind("sha256:", 0) == 0);
    if (registry_digest.empty()) registry_digest = d;
    CHECK(d == registry_digest);
    CHECK(rk["image"] == re["image"]);
    CHECK(rk["image"] == reg + "/lazyagent-env@" + d);
    CHECK(rk["image_digest"].get<std::string>().find(d) != std::string::npos);
    CHECK(rk["sandbox_id"].get<std::string>().rfind("default/", 0) == 0);
  }
  json fixed_k8s = result_of(out_k8s, "oset-fix");
  CHECK(corpus::sorted_strings(fixed_k8s["triage"]["fixed"]) == p.fixed);
  CHECK(corpus::sorted_strings(result_of(out_k8s, "oset-wrong")["triage"]["still_failing"]) == p.fixed);

  // run: the scripted provider answers with the fix as a diff; the planner
  // pod gets it, the sandbox pods (baseline and fix) run it on the environment.
  StubReply answer;
  answer.content = "The last element's index is not shifted down in discard:\n\n```diff\n" + prep.fix + "```\n";
  it::Provider provider({answer}, k8s_yaml + p.config, prep.repo);
  const auto ran = run_cli(provider.env(), {"run", "Fix the bug in ordered_set without changing the tests.", "--backend",
                                            "k8s", "--config", provider.config(), "--json", "--timeout", "400"},
                           900);
  const std::vector<json> seen = jobs.stop();
  INFO(ran.err.substr(ran.err.size() > 6000 ? ran.err.size() - 6000 : 0));
  INFO(ran.out.substr(0, 6000));
  REQUIRE(ran.exit_code == 0);
  json r = json_out(ran);
  CHECK(r["status"] == "passed");
  CHECK(r["tests_passed"] == true);
  CHECK(r["patch_format"] == "diff");
  CHECK(r["planner"]["status"] == "patch");
  CHECK(provider.stub().requests() == 1);
  CHECK(r["changed_paths"] == json::array({p.file}));
  CHECK(r["triage"]["baseline"]["tests_passed"] == false);
  CHECK(corpus::sorted_strings(r["triage"]["fixed"]) == p.fixed);
  CHECK(r["triage"]["newly_broken"].empty());
  // The planner's change is the prediction's: the same diff as eval proved on podman.
  CHECK(r["diff_sha256"] == result_of(out_podman, "oset-fix")["diff_sha256"]);
  json e = r["environment"];
  INFO(e.dump());
  CHECK(e["key"] == key);
  CHECK(e["digest"] == local["digest"]);
  CHECK(e["image"] == local["image"]);
  CHECK(e["registry"]["digest"] == registry_digest);
  CHECK(e["registry"]["pushed"] == false);  // eval pushed it: a HEAD found it
  CHECK(r["image"] == reg + "/lazyagent-env@" + registry_digest);

  // Every sandbox Job of the evals and the run, as the API server stored it, named the environment by digest.
  std::set<std::string> runs = {r["run_id"].get<std::string>(),
                                r["triage"]["baseline"].value("run_id", std::string())};
  for (const char* id : {"oset-fix", "oset-wrong"}) {
    json rk = result_of(out_k8s, id);
    runs.insert(rk["run_id"].get<std::string>());
    if (rk["triage"]["baseline"].contains("run_id")) runs.insert(rk["triage"]["baseline"]["run_id"].get<std::string>());
  }
  runs.erase("");
  int named = 0;
  for (const auto& job : seen) {
    if (!runs.count(job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()))) continue;
    CHECK(job["spec"]["template"]["spec"]["containers"][0]["image"] == reg + "/lazyagent-env@" + registry_digest);
    ++named;
  }
  CHECK(named >= 4);  // the run's two, eval's two fixes (its baseline may be a cached one)
  K8sClient k = k8sreg::reg_client();
  for (const auto& id : runs) CHECK(k8sreg::run_leftovers(k, id) == 0);
  WARN("python-ordered-set with its environment: eval --jobs 2 podman " << sp["wall_ms"] << " ms, k8s " << sk["wall_ms"]
                                                                       << " ms; run on k8s " << r["timings"].dump());
}
