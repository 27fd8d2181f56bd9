// k8s.registry with credentials (issue 32 item 1) on the real local cluster
// and a real registry with basic auth (scripts/k8s-registry.sh on its
// `auth-address`, which the cluster's containerd knows): the environment
// image pushed by podman with X-Registry-Auth and pulled by the sandbox pod,
// the planner's snapshot pulled by the planner pod, each through the run's
// own image pull Secret that no container sees and that goes with the run;
// wrong credentials refused by name before anything starts; no credential
// text in the results, the logs or the run store.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <chrono>
#include <set>
#include <thread>

#include "../corpus/corpus_projects.h"
#include "harness.h"
#include "k8s_registry_support.h"
#include "engine/k8s/k8s_environments.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;
using namespace k8sreg;

namespace {

// The run's pull Secrets as the API server stored them (recorded while they
// lived): of the image pull type, for this registry and user only.
void check_stored_pull_secrets(const std::vector<json>& seen, const std::vector<std::string>& names,
                               const AuthRegistry& reg) {
  for (const auto& name : names) {
    bool saw = false;
    for (const auto& s : seen) {
      if (s.value("/metadata/name"_json_pointer, std::string()) != name) continue;
      saw = true;
      CHECK(s["type"] == "kubernetes.io/dockerconfigjson");
      REQUIRE(s["data"].size() == 1);
      auto config = base64_decode(s["data"].value(".dockerconfigjson", ""));
      REQUIRE(config.has_value());
      const json auths = json::parse(*config)["auths"];
      REQUIRE(auths.size() == 1);
      CHECK(auths[reg.address]["username"] == reg.user);
      CHECK(auths[reg.address]["password"] == reg.password);  // what the kubelet pulls with
    }
    CHECK(saw);
  }
}

// Time for the recorders' watches to be listening before the CLI runs.

// python-ordered-set from the corpus, prepared, with its environment and the
// registry `k8s_lines` (the config's k8s: section); a CLI environment for it.
struct OrderedSet {
  const corpus::CorpusProject p = corpus::ordered_set_project();
  corpus::Prepared prep;
  std::string config;
  CliEnv env;
  explicit OrderedSet(const std::string& k8s_lines) {
    corpus::prepare(p, &prep);
    config = prep.dir.file("corpus.yaml", "seed: " + prep.repo + "\n" + p.config + "k8s:\n" + k8s_lines);
    env = CliEnv{prep.dir.path() + "/state", {{"KUBECONFIG", reg_kubeconfig()}}};
  }
};

}  // namespace

TEST_CASE("k8s registry auth: the environment image is pushed with credentials and the sandbox pods pull it by "
          "digest through the run's pull Secret, which no container sees and which goes with the run",
          "[k8s][registry][auth][environment]") {
  AuthRegistry reg;
  const OrderedSet o(reg.config_lines());
  const auto& [p, prep, config, env] = o;
  const auto built = run_cli(env, {"env", "build", "--config", config, "--json"}, 900);
  INFO(built.err.substr(built.err.size() > 4000 ? built.err.size() - 4000 : 0));
  REQUIRE(built.exit_code == 0);
  const json local = json_out(built);
  const std::string key = local["key"];
  // The registry is new: it has no environment, and refuses anonymous reads.
  CHECK(reg.tags(kEnvironmentRegistryRepo).empty());
  CHECK(sh("curl -s -o /dev/null -w '%{http_code}' http://" + reg.address + "/v2/" + kEnvironmentRegistryRepo +
           "/tags/list") == "401");

  JobRecorder jobs;
  Recorder secrets(kK8sSecrets, kLabelRun);
  const ProvenFix proven = prove_fix_on_k8s(env, config, prep.fix_file, p.fixed);
  const it::CliResult& good = proven.run;
  const json& g = proven.result;
  const json e = g["environment"];
  CHECK(e["key"] == key);
  CHECK(e["digest"] == local["digest"]);
  // Pushed by podman with the credentials, to the registry that asks for them.
  const json reg_e = e["registry"];
  INFO(reg_e.dump());
  CHECK(reg_e["pushed"] == true);
  CHECK(reg_e["tag"] == reg.address + "/lazyagent-env:" + key);
  const std::string digest = reg_e["digest"];
  REQUIRE(digest.rfind("sha256:", 0) == 0);
  CHECK(reg_e["image"] == reg.address + "/lazyagent-env@" + digest);
  RegistryClient r = reg.client();
  auto there = r.manifest_digest(kEnvironmentRegistryRepo, key, kImageManifestTypes);
  REQUIRE(there.ok());
  REQUIRE(there->has_value());
  CHECK(**there == digest);

  // Both sandbox Jobs (baseline, fix) ran the image by digest from that
  // registry, each through its own pull Secret and nothing else.
  const std::vector<std::string> runs = {g["run_id"], g["triage"]["baseline"]["run_id"]};
  std::vector<std::string> names;
  for (const auto& run : runs) names.push_back(run + "-registry");
  int checked = 0;
  for (const auto& job : jobs.stop()) {
    const std::string run = job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string());
    if (run != runs[0] && run != runs[1]) continue;
    const json pod = job["spec"]["template"]["spec"];
    CHECK(pod["containers"][0]["image"] == reg_e["image"]);
    CHECK(check_pull_secret_only(pod, run + "-registry", reg).empty());  // no other Secret
    ++checked;
  }
  CHECK(checked >= 2);
  check_stored_pull_secrets(secrets.stop(), names, reg);
  K8sClient k = reg_client();
  for (const auto& run : runs) {
    check_pull_secrets_gone(k, run, {run + "-registry"});
    CHECK(run_leftovers(k, run) == 0);
  }
  // No credential in the results, the output, or the run store (records, logs).
  CHECK_FALSE(reg.in_text(good.out + good.err + built.out + built.err));
  CHECK(reg.files_with_credentials(env.state_dir) == 0);
  WARN("environment " << key << " pushed with credentials in " << reg_e["push_ms"] << " ms; fix run "
                      << g["timings"].dump());
}

TEST_CASE("k8s registry auth: the planner pod pulls its tools' snapshot through its own pull Secret, beside the "
          "provider Secret only, the sandbox pod gets the pull Secret only, both go with the run",
          "[k8s][registry][auth][loop]") {
  AuthRegistry reg;
  const json fix = json::parse(fixing_patch());
  auto script = [](const json& reply) {
    auto s = parse_stub_script(json{{"api_key", kKey}, {"replies", {reply}}}.dump());
    REQUIRE(s.ok());
    return s->replies.at(0);
  };
  Provider p({script({{"tool_calls", {{{"name", "read_file"}, {"arguments", {{"path", "calculator.py"}}}}}}}),
              // The file's line as the pod's tools read it from the snapshot: else a 400.
              script({{"tool_calls", {{{"name", "submit_patch"}, {"arguments", {{"files", fix["files"]}}}}}},
                      {"require_last", {"10:     return a - b"}}})},
             reg.config_lines() + "planner:\n  tools: true\n  max_turns: 4\n");
  Recorder jobs(kK8sJobs, kLabelRun);
  Recorder secrets(kK8sSecrets, kLabelRun);
  CliResult r = p.run();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(p.stub().requests() == 2);
  CHECK(j["planner"]["loop"]["stop_reason"] == "submitted");
  const json snap = j["planner"]["snapshot"];
  CHECK(snap["transport"] == "registry");
  CHECK(snap["pull_secret"] == true);
  CHECK(snap["image"].get<std::string>().rfind(reg.address + "/" + kSeedImageRepo + "@", 0) == 0);
  CHECK(j["policy"]["k8s"]["seed"]["pull_secret"] == true);

  const std::string run_id = j["run_id"];
  const std::string planner_secret = run_id + "-planner-registry", sandbox_secret = run_id + "-registry";
  bool planner = false, sandbox = false;
  for (const auto& job : jobs.stop()) {
    if (job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != run_id) continue;
    const std::string role = job.value("/metadata/labels/io.lazyagent.role"_json_pointer, std::string());
    const json pod = job["spec"]["template"]["spec"];
    if (role == "planner") {
      planner = true;
      CHECK(pod["initContainers"][0]["image"] == snap["image"]);  // pulled with the Secret
      const auto volumes = check_pull_secret_only(pod, planner_secret, reg);
      REQUIRE(volumes.size() == 1);  // the provider's, and no other
      CHECK(volumes[0].rfind("lazyagent-it-provider-", 0) == 0);
    } else if (role == "sandbox") {
      sandbox = true;
      CHECK(check_pull_secret_only(pod, sandbox_secret, reg).empty());
    }
  }
  CHECK(planner);
  CHECK(sandbox);
  check_stored_pull_secrets(secrets.stop(), {planner_secret, sandbox_secret}, reg);
  K8sClient k = client();
  check_pull_secrets_gone(k, run_id, {planner_secret, sandbox_secret});
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + run_id) == 0);
  for (const auto& t : reg.tags()) CHECK(t.find(run_id) == std::string::npos);
  CHECK_FALSE(reg.in_text(r.out + r.err));
  CliResult task_logs = p.cli({"task", "logs", j["planner"]["task_id"].get<std::string>()});
  CHECK(task_logs.exit_code == 0);
  CHECK(task_logs.out.find("tool: turn 1: read_file") != std::string::npos);
  CHECK_FALSE(reg.in_text(task_logs.out + task_logs.err));
  CHECK(reg.files_with_credentials(p.env().state_dir) == 0);
}

TEST_CASE("k8s registry auth: wrong credentials are refused naming the registry, the user and the password file, "
          "before anything is pushed or any Job or Secret made",
          "[k8s][registry][auth]") {
  AuthRegistry reg;
  TempDir dir;
  const std::string wrong = "pw-wrong-" + std::to_string(getpid());
  const std::string wrong_file = dir.file("wrong-password", wrong + "\n");
  std::string lines = reg.config_lines();
  lines = corpus::replaced_once(lines, reg.password_file, wrong_file);
  auto check_refused = [&](const CliResult& r) {
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    const std::string said = r.out + r.err;
    CHECK(said.find("k8s.registry: the registry " + reg.address + " said 401") != std::string::npos);
    CHECK(said.find("it refused the user 'lazyagent' with the password in " + wrong_file +
                    ": fix k8s.registry_username or the password in k8s.registry_password_file") != std::string::npos);
    CHECK(said.find(wrong) == std::string::npos);
    CHECK_FALSE(reg.in_text(said));
  };
  JobRecorder sandbox_jobs;
  Recorder all_jobs(kK8sJobs, kLabelRun), secrets(kK8sSecrets, kLabelRun);
  {  // A sandbox with an environment: refused before podman pushes it.
    const OrderedSet o(lines);
    const auto& [p, prep, config, env] = o;
    check_refused(run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", prep.fix_file, "--json"}, 300));
    CHECK(reg.files_with_credentials(env.state_dir) == 0);
    CHECK(sh("grep -rlF -e '" + wrong + "' " + env.state_dir + " 2>/dev/null | wc -l") == "0\n");
  }
  {  // The planner's tool loop: refused before the planner pod (the provider is never asked).
    Provider p({}, lines + "planner:\n  tools: true\n  max_turns: 4\n");
    check_refused(p.run());
    CHECK(p.stub().requests() == 0);
    CHECK(sh("grep -rlF -e '" + wrong + "' " + p.env().state_dir + " 2>/dev/null | wc -l") == "0\n");
  }
  CHECK(all_jobs.stop().empty());
  CHECK(sandbox_jobs.stop().empty());
  CHECK(secrets.stop().empty());
  CHECK(reg.tags().empty());
  CHECK(reg.tags(kEnvironmentRegistryRepo).empty());
}

// eval with the environment on the registry that asks for credentials,
// --jobs 2: the verdicts as expected; every sandbox Job pulled through its
// own pull Secret, gone after; no credential in eval's output, its per-task
// results, its SWE-bench report or its state.
TEST_CASE("k8s registry auth: eval --jobs 2 with the environment on the registry with credentials judges the fix and "
          "the wrong fix, every sandbox Job's pull Secret goes with its run, no credential in the output, the report "
          "or the state",
          "[k8s][registry][auth][eval]") {
  AuthRegistry reg;
  const OrderedSet o(reg.config_lines());
  const auto& [p, prep, config, env] = o;
  const std::string preds =
      prep.dir.file("preds.jsonl", prediction("oset-fix", prep.fix) + prediction("oset-wrong", prep.wrong));
  const std::string map = prep.dir.file("seeds.json", json{{"oset-fix", prep.repo}, {"oset-wrong", prep.repo}}.dump());
  const std::string out = prep.dir.path() + "/out", report = prep.dir.path() + "/swebench.json";

  JobRecorder jobs;
  Recorder secrets(kK8sSecrets, kLabelRun);
  const CliResult r = eval_run(env, "k8s", preds, map, config, out, {"--report", "swebench:" + report});
  const json s = json::parse(r.out);
  INFO(s.dump());
  CHECK(s["passed"]["ids"] == json({"oset-fix"}));
  CHECK(s["failed"]["ids"] == json({"oset-wrong"}));
  for (const char* category : {"refused", "infra_error", "isolation_violation"}) CHECK(s[category]["ids"].empty());
  const json swe = json::parse(read_file(report), nullptr, false);
  REQUIRE(swe.is_object());
  CHECK(swe["resolved_ids"] == json({"oset-fix"}));
  CHECK(swe["unresolved_ids"] == json({"oset-wrong"}));
  CHECK(swe["error_ids"].empty());

  // Both on the environment from the registry with credentials, by digest;
  // the runs (fixes and baselines) as they happened.
  const json fixed = result_of(out, "oset-fix"), wrong = result_of(out, "oset-wrong");
  CHECK(corpus::sorted_strings(fixed["triage"]["fixed"]) == p.fixed);
  CHECK(corpus::sorted_strings(wrong["triage"]["still_failing"]) == p.fixed);
  const std::string image = fixed["environment"]["registry"]["image"];
  CHECK(image.rfind(reg.address + "/lazyagent-env@sha256:", 0) == 0);
  CHECK(wrong["environment"]["registry"]["image"] == image);
  std::set<std::string> runs;
  for (const json* res : {&fixed, &wrong}) {
    runs.insert((*res)["run_id"].get<std::string>());
    runs.insert((*res)["triage"]["baseline"].value("run_id", std::string()));
  }
  runs.erase("");
  CHECK(runs.size() >= 3);  // the two fixes and at least one baseline

  // Every sandbox Job of them pulled the environment through its run's own
  // pull Secret and nothing else; each Secret as stored; all gone after.
  std::set<std::string> names;  // a Job is seen at each change
  for (const auto& job : jobs.stop()) {
    const std::string run = job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string());
    if (!runs.count(run)) continue;
    const json pod = job["spec"]["template"]["spec"];
    CHECK(pod["containers"][0]["image"] == image);
    CHECK(check_pull_secret_only(pod, run + "-registry", reg).empty());
    names.insert(run + "-registry");
  }
  CHECK(names.size() == runs.size());
  check_stored_pull_secrets(secrets.stop(), {names.begin(), names.end()}, reg);
  K8sClient k = reg_client();
  for (const auto& run : runs) {
    check_pull_secrets_gone(k, run, {run + "-registry"});
    CHECK(run_leftovers(k, run) == 0);
  }
  // The credential in none of its four forms: eval's stdout and stderr, the
  // per-task results and logs under --out, the report, the run store.
  CHECK_FALSE(reg.in_text(r.out + r.err));
  CHECK(reg.files_with_credentials(out) == 0);
  CHECK(reg.files_with_credentials(report) == 0);
  CHECK(reg.files_with_credentials(env.state_dir) == 0);
  CHECK(sh("ls " + out + "/results | wc -l") == "2\n");  // what was searched is there
  WARN("eval --jobs 2 with credentials: " << s["wall_ms"] << " ms");
}
