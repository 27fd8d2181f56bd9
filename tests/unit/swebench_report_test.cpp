#include "catch_compat.h"

#include "eval/swebench_report.h"

using lazyagent::swebench_report;
using nlohmann::json;

namespace {

// A result file as eval writes it (eval_runner.h), reduced to what the report reads.
json result_file(const std::string& status, const std::string& category, json triage) {
  json r = {{"status", status}, {"tests_passed", category == "passed"}, {"eval", {{"category", category}}}};
  if (!triage.is_null()) r["triage"] = std::move(triage);
  if (category != "passed") r["reason"] = "why not";
  return r;
}

json full_triage(json fixed, json still, json passing, json broken) {
  return {{"available", true}, {"fixed", fixed},      {"still_failing", still}, {"passing", passing},
          {"newly_broken", broken}, {"added", json::array()}, {"flaky", json::array()}};
}

}  // namespace

TEST_CASE("swebench report: a fixing patch is resolved with its FAIL_TO_PASS and PASS_TO_PASS from the triage") {
  const json r = swebench_report(
      {"calc-1"}, {{"calc-1", result_file("completed", "passed",
                                          full_triage({"test_add"}, json::array(), {"test_sub", "test_mul"}, json::array()))}});
  const json& i = r["instances"]["calc-1"];
  CHECK(i["resolved"] == true);
  CHECK(i["patch_exists"] == true);
  CHECK(i["patch_successfully_applied"] == true);
  CHECK(i["triage_available"] == true);
  CHECK(i["tests_status"]["FAIL_TO_PASS"]["success"] == json({"test_add"}));
  CHECK(i["tests_status"]["FAIL_TO_PASS"]["failure"] == json::array());
  CHECK(i["tests_status"]["PASS_TO_PASS"]["success"] == json({"test_sub", "test_mul"}));
  CHECK(i["tests_status"]["PASS_TO_PASS"]["failure"] == json::array());
  CHECK(r["resolved_ids"] == json({"calc-1"}));
  CHECK(r["completed_instances"] == 1);
  CHECK(r["schema_version"] == 2);
}

TEST_CASE("swebench report: a patch that breaks a passing test is unresolved, the broken test in PASS_TO_PASS failure") {
  const json r = swebench_report(
      {"t"}, {{"t", result_file("completed", "failed", full_triage({"test_add"}, json::array(), {"test_mul"}, {"test_sub"}))}});
  const json& i = r["instances"]["t"];
  CHECK(i["resolved"] == false);
  CHECK(i["tests_status"]["PASS_TO_PASS"]["failure"] == json({"test_sub"}));
  CHECK(i["tests_status"]["FAIL_TO_PASS"]["success"] == json({"test_add"}));
  CHECK(i["reason"] == "why not");
  CHECK(r["unresolved_ids"] == json({"t"}));
  CHECK(r["resolved_ids"] == json::array());
}

TEST_CASE("swebench report: an empty model_patch, a refused patch, an infra error and a task with no result") {
  json empty = result_file("refused", "refused", nullptr);
  empty["findings"] = json::array({{{"code", "empty_diff"}, {"message", "no diff"}}});
  json refused = result_file("refused", "refused", nullptr);
  refused["findings"] = json::array({{{"code", "diff_does_not_apply"}, {"message", "hunk 1"}}});
  json infra = {{"error", "podman went away"}, {"eval", {{"category", "infra_error"}}}};
  const json r = swebench_report({"empty", "refused", "infra", "never"},
                                 {{"empty", empty}, {"refused", refused}, {"infra", infra}});
  CHECK(r["instances"]["empty"]["patch_exists"] == false);
  CHECK(r["instances"]["empty"]["patch_successfully_applied"] == false);
  CHECK(r["instances"]["refused"]["patch_exists"] == true);
  CHECK(r["instances"]["refused"]["patch_successfully_applied"] == false);
  CHECK(r["instances"]["refused"]["triage_available"] == false);
  CHECK(r["instances"]["infra"]["error"] == "podman went away");
  CHECK(r["instances"]["never"]["category"] == "no_result");
  CHECK(r["empty_patch_ids"] == json({"empty"}));
  CHECK(r["completed_ids"] == json({"empty", "refused"}));
  CHECK(r["error_ids"] == json({"infra", "never"}));
  CHECK(r["incomplete_ids"] == json({"never"}));
  CHECK(r["total_instances"] == 4);
  CHECK(r["resolved_instances"] == 0);
  CHECK(r["unresolved_instances"] == 2);
}

TEST_CASE("swebench report: an isolation violation is named as one, an error instance, never resolved") {
  json broke = {{"error", "the isolation probe inside the sandbox found: eth0"},
                {"error_kind", "isolation"},
                {"eval", {{"category", "isolation_violation"}}}};
  json infra = {{"error", "podman went away"}, {"eval", {{"category", "infra_error"}}}};
  const json r = swebench_report({"broke", "infra"}, {{"broke", broke}, {"infra", infra}});
  CHECK(r["instances"]["broke"]["category"] == "isolation_violation");
  CHECK(r["instances"]["broke"]["resolved"] == false);
  CHECK(r["isolation_violation_ids"] == json({"broke"}));
  CHECK(r["isolation_violation_instances"] == 1);
  CHECK(r["error_ids"] == json({"broke", "infra"}));
  CHECK(r["completed_instances"] == 0);
}

TEST_CASE("swebench report: a flaky task is completed but not resolved, malformed triage lists give empty lists") {
  json flaky = result_file("completed", "flaky", json{{"available", true}, {"fixed", "not a list"}, {"flaky", {"test_x", 7}}});
  const json r = swebench_report({"f"}, {{"f", flaky}});
  const json& i = r["instances"]["f"];
  CHECK(i["resolved"] == false);
  CHECK(i["flaky"] == json({"test_x"}));
  CHECK(i["tests_status"]["FAIL_TO_PASS"]["success"] == json::array());
  CHECK(r["completed_ids"] == json({"f"}));
}

TEST_CASE("swebench report: signed verdicts are listed per instance and in attestation_files", "[quick]") {
  json r1 = result_file("completed", "passed", json());
  r1["attestation"] = {{"path", "/s/artifacts/r-1.intoto.jsonl"}, {"keyid", "k"}, {"sha256", "x"}};
  const json r = swebench_report({"a", "b"}, {{"a", r1}, {"b", result_file("completed", "failed", json())}});
  CHECK(r["instances"]["a"]["attestation"] == "/s/artifacts/r-1.intoto.jsonl");
  CHECK_FALSE(r["instances"]["b"].contains("attestation"));
  CHECK(r["attestation_files"] == json{{"a", "/s/artifacts/r-1.intoto.jsonl"}});
}
