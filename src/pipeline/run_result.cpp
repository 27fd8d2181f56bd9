#include "pipeline/run_result.h"

#include <ctime>

#include "store/ownership.h"
#include "store/provenance.h"

namespace lazyagent {

using nlohmann::json;

const char* status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning: return "running";
    case RunStatus::kPlanning: return "planning";
    case RunStatus::kPassed: return "passed";
    case RunStatus::kFailed: return "failed";
    case RunStatus::kRefused: return "refused";
    case RunStatus::kPlannerError: return "planner_error";
    case RunStatus::kError: return "error";
    case RunStatus::kInterrupted: return "interrupted";
  }
  return "error";
}

const char* category_name(Category c) {
  switch (c) {
    case Category::kNone: return "";
    case Category::kPassed: return "passed";
    case Category::kFailed: return "failed";
    case Category::kFlaky: return "flaky";
    case Category::kRefused: return "refused";
    case Category::kInfraError: return "infra_error";
    case Category::kIsolationViolation: return "isolation_violation";
  }
  return "";
}

bool category_from_name(const std::string& name, Category* out) {
  for (Category c : kAllCategories) {
    if (name == category_name(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

Category category_of(const Error& e) {
  if (e.kind == ErrorKind::kIsolation) return Category::kIsolationViolation;
  if (is_infra_error(e)) return Category::kInfraError;
  return Category::kNone;
}

bool is_infra_error(const Error& e) {
  return e.kind == ErrorKind::kEngine || e.kind == ErrorKind::kTimeout || e.kind == ErrorKind::kUnreachable;
}

json environment_json(const EnvironmentConfig& env) {
  if (!env.present || env.resolved.key.empty()) return nullptr;
  json j = {{"key", env.resolved.key},     {"image", env.resolved.image},  {"digest", env.resolved.digest},
            {"built", env.resolved.built}, {"build_ms", env.resolved.build_ms}};
  if (!env.resolved.registry.image.empty()) {
    // Kubernetes: the same image, pushed to k8s.registry and pulled by digest.
    const auto& reg = env.resolved.registry;
    j["registry"] = {{"image", reg.image}, {"tag", reg.tag},       {"digest", reg.digest},
                     {"pushed", reg.pushed}, {"push_ms", reg.push_ms}};
  }
  if (!env.egress.empty()) {
    // What the allow-list let through (hashed into the image's labels) and refused.
    j["egress"] = {{"allowed", env.egress},
                   {"reached", env.resolved.egress_reached},
                   {"reached_sha256", env.resolved.egress_reached_sha256},
                   {"denied", env.resolved.egress_denied},
                   {"probe", env.resolved.egress_probe.empty() ? json(nullptr) : json(env.resolved.egress_probe)},
                   {"probe_attempts", env.resolved.egress_probe_attempts}};
  }
  return j;
}

json result_to_json(const RunResult& r) {
  json timings = json::object();
  for (const auto& t : r.timings) timings[t.step] = t.ms;
  json j = {
      {"run_id", r.run_id},
      {"status", status_name(r.status)},
      {"sandbox_id", r.sandbox_id},
      {"changed_paths", r.changed_paths},
      {"test_exit_code", r.test_exit_code},
      {"test_output", r.test_output},
      {"test_output_truncated", r.test_output_truncated},
      {"tests_passed", r.tests_passed},
      {"image", r.image},
      {"image_digest", r.image_digest},
      {"policy", r.policy},
      {"timings", timings},
      {"seed_sha256", r.seed_sha256},
      {"patch_sha256", r.patch_sha256},
  };
  if (!r.environment.is_null()) j["environment"] = r.environment;
  if (!r.patch_format.empty()) j["patch_format"] = r.patch_format;
  if (r.change.is_object()) {
    j["diff_stats"] = r.change["diff_stats"];
    j["changed_files"] = r.change["changed_files"];
  }
  if (!r.diff_sha256.empty()) j["diff_sha256"] = r.diff_sha256;
  if (r.seed_source.is_object()) j["seed_source"] = r.seed_source;
  if (!r.isolation_probe.is_null()) j["isolation_probe"] = r.isolation_probe;
  if (!r.warm.is_null()) j["warm"] = r.warm;
  if (!r.removal.empty()) j["removal"] = r.removal;
  if (!r.resources.is_null()) j["resources"] = r.resources;
  if (!r.tests.format.empty()) j["tests"] = cases_to_json(r.tests);
  if (r.runner.found) j["runner"] = runner_report_to_json(r.runner);
  if (!r.evidence.empty()) j["evidence"] = r.evidence;
  if (!r.evidence_note.empty()) j["evidence_note"] = r.evidence_note;
  if (r.category != Category::kNone) j["category"] = category_name(r.category);
  if (!r.triage.is_null()) j["triage"] = r.triage;
  if (!r.attestation.is_null()) j["attestation"] = r.attestation;
  if (r.repair.is_object()) {
    for (const auto& [k, v] : r.repair.items()) j[k] = v;
  }
  if (!r.tests_passed) j["reason"] = r.reason;
  if (r.planner.is_object()) {
    j["planner_task_id"] = r.planner.value("task_id", "");
    j["usage"] = r.planner.value("usage", json::object());
    j["planner"] = r.planner;
  }
  if (!r.findings.empty()) j["findings"] = findings_to_json(r.findings);
  // Patched code a forged report needs (suspicious_code.h); [] when none.
  if (!r.baseline) j["suspicious"] = findings_to_json(r.suspicious);
  if (!r.provenance.is_null()) j["provenance"] = r.provenance;
  return j;
}

json run_record(const RunResult& r, const RecordInfo& info) {
  json rec = result_to_json(r);
  rec["kind"] = info.kind == RunKind::kBaseline ? "baseline" : info.kind == RunKind::kRun ? "run" : "test";
  const Owner o = current_owner();
  rec["owner"] = {{"user_host", o.user_host}, {"pid", o.pid}, {"start_time", o.start_time}};
  rec["seed"] = info.seed;
  rec["test_command"] = info.test_command;
  rec["updated_at"] = static_cast<long>(std::time(nullptr));
  if (!info.error.empty()) {
    rec["error"] = info.error;
    if (r.reason.empty()) rec["reason"] = info.error;
  }
  if (info.category != Category::kNone) rec["category"] = category_name(info.category);
  if (!info.backend.empty()) rec["backend"] = info.backend;
  // The envelope itself lives in the record, written with fsync as the record
  // is; the artifacts/ file is its copy (attest_run.h).
  if (rec.contains("attestation") && !r.attestation_envelope.empty()) {
    rec["attestation"]["envelope"] = r.attestation_envelope;
  }
  rec["provenance"] = build_provenance(rec);
  return rec;
}

}  // namespace lazyagent
