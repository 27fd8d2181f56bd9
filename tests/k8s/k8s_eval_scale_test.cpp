// eval at scale on the cluster (issue 32 item 4): the same SWE-bench
// predictions over a real project (PLY, ~1.5 MB through the registry) judged
// by `eval --jobs 2` on podman and on the local cluster give the same
// SWE-bench report, instance by instance; both wall times are printed (the
// throughput figure in docs/performance.md comes from bench/eval_k8s_vs_podman.sh).
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "harness.h"
#include "k8s_registry_support.h"
#include "ply_repo.h"

using nlohmann::json;
using namespace it;
using k8sreg::prediction;

namespace {

std::string scale_kubeconfig() {
  if (const char* k = std::getenv("KUBECONFIG"); k && *k) return k;
  return ply_trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-cluster.sh status 2>/dev/null"));
}

std::string scale_registry() {
  const std::string a = ply_trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh status 2>/dev/null"));
  REQUIRE_FALSE(a.empty());
  return a;
}

struct Eval {
  json summary, report;
  long wall_ms = 0;
};

}  // namespace

TEST_CASE("k8s eval at scale: SWE-bench predictions over PLY with --jobs 2 give the same report on the cluster as on "
          "podman",
          "[k8s][registry][eval]") {
  PlyRepo ply;
  TempDir dir;
  const std::string fix = ply.git_diff();
  const std::string plain = ply.plain_diff();
  REQUIRE(fix.find("+" + PlyRepo::kRight) != std::string::npos);
  // A wrong fix: the docstring above the bug changes, the bug stays.
  std::string yacc = read_file(ply.yacc_path());
  const auto bug_at = yacc.find(PlyRepo::kBug);
  REQUIRE(bug_at != std::string::npos);
  const std::string buggy = yacc;
  yacc.insert(bug_at, "            # looked at\n");
  ply_put(ply.yacc_path(), yacc);
  const std::string wrong = sh("git -C " + ply.repo + " diff");
  ply_put(ply.yacc_path(), buggy);
  REQUIRE(wrong.find("+            # looked at") != std::string::npos);

  const std::string preds = dir.file("preds.jsonl", prediction("ply-fix", fix) + prediction("ply-fix-plain", plain) +
                                                        prediction("ply-wrong", wrong) + prediction("ply-empty", ""));
  const json entry = {{"seed", ply.repo},
                      {"test_command",
                       "unset PYTHONDONTWRITEBYTECODE; cd test && python3 testlex.py -v && python3 testyacc.py -v"},
                      {"allow", json::array({"ply/"})}};
  const std::string map = dir.file(
      "seeds.json", json{{"ply-fix", entry}, {"ply-fix-plain", entry}, {"ply-wrong", entry}, {"ply-empty", entry}}.dump());
  const std::string config = dir.file(
      "config.yaml", "timeouts:\n  test_seconds: 400\n"  // gVisor pods on 2 loaded cores: 60-150 s a run
                     "patch:\n  format: diff\n  max_files: 20\n  max_diff_bytes: 65536\n  max_changed_lines: 2000\n"
                     "k8s:\n  registry: " + scale_registry() + "\n  registry_plain_http: true\n");

  const auto eval = [&](const std::string& backend) {
    TempDir state;
    const std::string out = dir.path() + "/out-" + backend, report = dir.path() + "/swebench-" + backend + ".json";
    std::vector<std::string> args = {"eval",  "--predictions", preds, "--seed-map", map, "--config", config, "--jobs", "2",
                                     "--out", out, "--report", "swebench:" + report, "--json", "--backend", backend};
    const auto t0 = std::chrono::steady_clock::now();
    CliResult r = run_cli({state.path(), {{"KUBECONFIG", scale_kubeconfig()}}}, args, 560);
    Eval e;
    e.wall_ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    INFO(backend << ": " << r.err);
    CHECK(r.exit_code == 0);  // every task judged (a failed or refused task is a verdict, not an error)
    e.summary = json::parse(r.out, nullptr, false);
    REQUIRE(e.summary.is_object());
    e.report = json::parse(read_file(report), nullptr, false);
    REQUIRE(e.report.is_object());
    return e;
  };
  const Eval podman = eval("podman");
  const Eval k8s = eval("k8s");
  WARN("eval --jobs 2 of 4 PLY predictions (3 runs + baselines): podman " << podman.wall_ms << " ms, k8s "
                                                                          << k8s.wall_ms << " ms");

  // What the verdicts are, on podman: the two fixes resolved, the wrong one
  // not, the empty patch counted as SWE-bench counts it.
  const json& p = podman.report;
  CHECK(p["total_instances"] == 4);
  CHECK(p["resolved_ids"] == json({"ply-fix", "ply-fix-plain"}));
  json unresolved = p["unresolved_ids"];
  std::sort(unresolved.begin(), unresolved.end());
  CHECK(unresolved == json({"ply-empty", "ply-wrong"}));
  CHECK(p["empty_patch_ids"] == json({"ply-empty"}));
  CHECK(p["error_ids"] == json::array());
  CHECK(p["instances"]["ply-fix"]["tests_status"]["FAIL_TO_PASS"]["success"].size() >= 1);
  CHECK(p["instances"]["ply-wrong"]["tests_status"]["FAIL_TO_PASS"]["failure"].size() >= 1);

  // The cluster says the same, instance by instance.
  const json& k = k8s.report;
  for (const char* key : {"total_instances", "completed_ids", "resolved_ids", "unresolved_ids", "empty_patch_ids",
                          "error_ids", "incomplete_ids"}) {
    INFO(key);
    json a = k[key], b = p[key];  // in the order the tasks finished: compared as sets
    if (a.is_array()) std::sort(a.begin(), a.end());
    if (b.is_array()) std::sort(b.begin(), b.end());
    CHECK(a == b);
  }
  for (const auto& [id, inst] : p["instances"].items()) {
    INFO(id);
    // On a difference, what each side's baseline said (an error, a timeout).
    std::string baselines;
    for (const char* side : {"podman", "k8s"}) {
      const json r = json::parse(read_file(dir.path() + "/out-" + side + "/results/" + id + ".json"), nullptr, false);
      const json b = r.is_object() ? r.value("/triage/baseline"_json_pointer, json()) : json();
      baselines += std::string(side) + " baseline: " +
                   (b.is_object() ? json{{"reason", b.value("reason", json())},
                                         {"error", b.value("error", json())},
                                         {"cached", b.value("cached", json())}}.dump()
                                  : b.dump()) + "\n";
    }
    INFO(baselines);
    REQUIRE(k["instances"].contains(id));
    for (const char* field : {"patch_exists", "patch_successfully_applied", "resolved", "tests_status"}) {
      INFO(field);
      CHECK(k["instances"][id][field] == inst[field]);
    }
  }
  for (const char* category : {"passed", "failed", "refused", "infra_error"}) {
    INFO(category);
    CHECK(k8s.summary[category]["ids"] == podman.summary[category]["ids"]);
  }
  // The cluster's runs went through the registry (a real-size seed), as pods.
  const json one = json::parse(read_file(dir.path() + "/out-k8s/results/ply-fix.json"), nullptr, false);
  REQUIRE(one.is_object());
  CHECK(one["sandbox_id"].get<std::string>().rfind("default/", 0) == 0);
  CHECK(one["policy"]["k8s"]["seed"]["transport"] == "registry");
}
