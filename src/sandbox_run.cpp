#include "sandbox_run.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "interrupt.h"
#include "isolation_probe.h"
#include "log_stream.h"
#include "ownership.h"
#include "policy_verifier.h"
#include "provenance.h"
#include "reaper.h"
#include "runtime_engine.h"
#include "runtime_policy.h"
#include "sandbox_policy.h"
#include "seed_snapshot.h"
#include "terminal_text.h"
#include "test_pause.h"
#include "verdict.h"

namespace lazyagent {

using nlohmann::json;

json result_to_json(const TestResult& r) {
  json timings = json::object();
  for (const auto& t : r.timings) timings[t.step] = t.ms;
  json j = {
      {"run_id", r.run_id},
      {"status", r.status},
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
  if (!r.isolation_probe.is_null()) j["isolation_probe"] = r.isolation_probe;
  if (!r.tests.format.empty()) j["tests"] = cases_to_json(r.tests);
  if (!r.category.empty()) j["category"] = r.category;
  if (!r.triage.is_null()) j["triage"] = r.triage;
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
  return j;
}

namespace {

constexpr const char* kProbeViolation = "the isolation probe inside the sandbox found: ";

json record_of(const TestRequest& req, const TestResult& r, const std::string& status,
               const std::string& error, const std::string& category) {
  json rec = result_to_json(r);
  rec["status"] = status;
  rec["kind"] = req.baseline ? "baseline" : r.planner.is_object() ? "run" : "test";
  const Owner o = current_owner();
  rec["owner"] = {{"user_host", o.user_host}, {"pid", o.pid}, {"start_time", o.start_time}};
  rec["seed"] = req.config.seed;
  rec["test_command"] = req.config.test_command;
  rec["updated_at"] = static_cast<long>(std::time(nullptr));
  if (!error.empty()) rec["error"] = error;
  if (!category.empty()) rec["category"] = category;
  rec["provenance"] = build_provenance(rec);
  return rec;
}

}  // namespace

bool is_isolation_violation(const Error& e) {
  return e.kind == ErrorKind::kEngine && e.message.find(kProbeViolation) != std::string::npos;
}

bool is_infra_error(const Error& e) {
  return (e.kind == ErrorKind::kEngine || e.kind == ErrorKind::kTimeout) && !is_isolation_violation(e);
}

Status write_result_record(const RunStore& store, const TestRequest& req, const TestResult& r) {
  return store.write(record_of(req, r, r.status, "", ""));
}

namespace {

// Removes its container unless released; used on every exit path.
class ContainerGuard {
 public:
  explicit ContainerGuard(PodmanClient& p) : podman_(p) {}
  ~ContainerGuard() {
    if (!id_.empty()) (void)podman_.remove(id_);
  }
  void hold(const std::string& id) { id_ = id; }
  Status remove_now() {
    if (id_.empty()) return ok_status();
    auto st = podman_.remove(id_);
    if (st) id_.clear();
    return st;
  }

 private:
  PodmanClient& podman_;
  std::string id_;
};

// Deletes a directory tree when it goes out of scope.
class TreeGuard {
 public:
  ~TreeGuard() {
    if (!path_.empty()) (void)remove_tree(path_);
  }
  void hold(const std::string& p) { path_ = p; }
  void remove_now() {
    if (!path_.empty()) (void)remove_tree(path_);
    path_.clear();
  }

 private:
  std::string path_;
};

class TestPipeline {
 public:
  TestPipeline(const TestRequest& req, PodmanClient& podman, const RunStore& store,
               const ProgressFn& progress)
      : req_(req), podman_(podman), store_(store), progress_(progress), guard_(podman) {}

  Result<TestResult> run() {
    res_.run_id = req_.run_id.empty() ? new_run_id() : req_.run_id;
    res_.planner = req_.planner;
    policy_ = policy_from_config(req_.config, req_.timeout_seconds);
    res_.image = policy_.image;
    runtime_ = req_.config.engine.runtime;
    // A demanded limit the runtime cannot enforce refuses the run before
    // anything exists, unless the weaker policy was accepted explicitly.
    if (auto st = check_policy_acceptable(req_.config); !st) return st.error();
    res_.policy = effective_policy_json(policy_, runtime_, req_.config.engine.accept_weaker_policy);
    if (auto st = store_.ensure(); !st) return st.error();
    save("running");
    auto st = steps();
    if (!st) {
      const bool interrupted = st.error().kind == ErrorKind::kInterrupted;
      cleanup();
      error_category_ = is_isolation_violation(st.error()) ? "isolation_violation"
                        : is_infra_error(st.error())       ? "infra_error"
                                                           : "";
      record_error(interrupted ? "interrupted" : "error", st.error().message);
      return st.error().context("run " + res_.run_id).with_id("run_id", res_.run_id).with_id("sandbox_id", res_.sandbox_id);
    }
    return res_;
  }

 private:
  Status steps() {
    if (auto st = timed("validate", [&] { return validate(); }); !st || refused()) return st;
    if (auto st = timed("snapshot", [&] { return snapshot(); }); !st || refused()) return st;
    for (auto [name, fn] : std::initializer_list<std::pair<const char*, Status (TestPipeline::*)()>>{
             {"engine", &TestPipeline::engine}, {"image", &TestPipeline::image},
             {"copy", &TestPipeline::copy},     {"create", &TestPipeline::create},
             {"verify", &TestPipeline::verify}, {"run", &TestPipeline::start_and_wait},
             {"logs", &TestPipeline::logs},     {"remove", &TestPipeline::remove}}) {
      if (fn == &TestPipeline::start_and_wait && req_.acquire_run_slot) {
        if (auto st = timed("queue", [&] { return acquire_slot(); }); !st) return st;
      }
      if (auto st = timed(name, [&] { return (this->*fn)(); }); !st) return st;
    }
    judge_and_save();
    return ok_status();
  }

  template <typename F>
  Status timed(const char* step, F&& f) {
    if (progress_) progress_(step);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = f();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    res_.timings.push_back({step, static_cast<long>(ms.count())});
    if (st) test_pause_point(std::string("after:") + step);
    if (st && interrupted_signal() != 0) {
      return Error{ErrorKind::kInterrupted, "interrupted by signal " + std::to_string(interrupted_signal())};
    }
    return st;
  }

  bool refused() const { return res_.status == "refused"; }

  Status validate() {
    if (req_.baseline) {  // the seed as it is: no patch
      res_.baseline = true;
      return ok_status();
    }
    ContractResult c = validate_patch_json(req_.patch_json, contract_limits(req_.config));
    patch_ = c.patch;
    res_.suspicious = c.suspicious;
    res_.patch_sha256 = c.ok() ? patch_sha256(patch_) : "";
    if (!c.ok()) {
      refuse(std::move(c.findings));
      return ok_status();
    }
    // The patch as proven, kept for `verify` (provenance.h).
    if (auto st = store_.write_text(kArtifactsDir, patch_artifact_name(res_.run_id), patch_to_json(patch_)); !st) {
      return st.error().context("storing the patch");
    }
    return ok_status();
  }

  Status snapshot() {
    auto snap = snapshot_seed(req_.config.seed);
    if (!snap) return snap.error().context("reading the seed");
    seed_ = std::move(*snap);
    res_.seed_sha256 = seed_.sha256;
    if (auto st = store_.write_text(kArtifactsDir, seed_manifest_artifact_name(res_.run_id),
                                    seed_manifest(seed_).dump(1) + "\n");
        !st) {
      return st.error().context("storing the seed manifest");
    }
    res_.changed_paths = changed_paths(seed_, patch_);
    auto findings = check_patch_against_seed(seed_, patch_);
    if (!findings.empty()) refuse(std::move(findings));
    return ok_status();
  }

  void refuse(std::vector<Finding> findings) {
    res_.findings = std::move(findings);
    res_.status = "refused";
    res_.reason = "patch refused: " + std::to_string(res_.findings.size()) + " finding(s)";
    save("refused");
  }

  Status engine() {
    if (req_.engine_checked) return ok_status();
    if (auto st = check_engine_runtime(podman_, runtime_); !st) return st;
    auto reaped = reap_leftovers(podman_, store_, false);
    if (!reaped) return reaped.error();
    if (!reaped->removed.empty() && progress_) {
      progress_("reaped " + std::to_string(reaped->removed.size()) + " container(s) left by crashed runs");
    }
    return ok_status();
  }

  Status image() {
    auto img = podman_.image_inspect(policy_.image, "images.sandbox");
    if (!img) return img.error();
    const std::string digest = img->value("Digest", "");
    res_.image_digest = digest.empty() ? img->value("Id", "") : digest;
    return ok_status();
  }

  Status copy() {
    const std::string dir = store_.work_dir() + "/" + res_.run_id;
    if (auto st = remove_tree(dir); !st) return st;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return engine_error("creating " + dir + ": " + std::strerror(errno));
    }
    copy_guard_.hold(dir);
    seed_copy_ = dir + "/seed";
    if (auto st = materialize_copy(seed_, patch_, seed_copy_); !st) return st;
    // The sandbox's root is host id userns.host_id: it owns its copy (read-only
    // at /seed), as host root owned it before; the run directory stays 0700.
    if (policy_.userns.enabled) {
      if (auto st = chown_tree(seed_copy_, policy_.userns.host_id, policy_.userns.host_id); !st) return st;
    }
    // podman reads the seccomp profile from a path on its host at create.
    seccomp_path_ = dir + "/seccomp.json";
    return write_file_atomic(seccomp_path_, policy_.seccomp.dump());
  }

  Status create() {
    sreq_.policy = policy_;
    sreq_.name = "lazyagent-sandbox-" + res_.run_id;
    sreq_.labels = owner_labels(current_owner(), "sandbox", res_.run_id);
    sreq_.seed_copy_path = seed_copy_;
    sreq_.seccomp_profile_path = seccomp_path_;
    sreq_.test_command = req_.config.test_command;
    sreq_.runtime = runtime_;
    auto reply = podman_.create(build_create_spec(sreq_));
    if (!reply) return reply.error().context("creating the sandbox");
    guard_.hold(reply->id);
    res_.sandbox_id = reply->id;
    save("running");
    for (const auto& w : reply->warnings) {
      if (progress_) progress_("podman warning: " + w);
    }
    return ok_status();
  }

  Status verify() {
    if (auto st = podman_.init(res_.sandbox_id); !st) return st;
    auto inspect = podman_.inspect(res_.sandbox_id);
    if (!inspect) return inspect.error();
    const std::string spec_path = inspect->value("StaticDir", "") + "/config.json";
    std::ifstream f(spec_path);
    std::stringstream ss;
    ss << f.rdbuf();
    json spec = json::parse(ss.str(), nullptr, false);
    if (!f || spec.is_discarded()) {
      return engine_error("verifying the sandbox: cannot read the OCI spec podman generated at " +
                          spec_path + " (lazyagent-oci must run on the podman host)");
    }
    auto violations = verify_effective_config(sreq_, res_.sandbox_id, *inspect, spec);
    if (!violations.empty()) {
      return engine_error("the sandbox podman created does not match the policy, refusing to start it: " +
                          describe_violations(violations));
    }
    return ok_status();
  }

  Status acquire_slot() {
    auto st = req_.acquire_run_slot();
    slot_held_ = st.ok();
    return st;
  }

  void release_slot() {
    if (slot_held_ && req_.release_run_slot) req_.release_run_slot();
    slot_held_ = false;
  }

  Status start_and_wait() {
    Status st = start_and_wait_in_slot();
    release_slot();
    return st;
  }

  Status start_and_wait_in_slot() {
    if (auto st = podman_.start(res_.sandbox_id); !st) return st;
    test_pause_point("after:start");
    auto code = podman_.wait(res_.sandbox_id, static_cast<long>(req_.timeout_seconds) * 1000);
    if (!code && code.error().kind == ErrorKind::kTimeout) {
      outcome_.timed_out = true;
      if (auto st = podman_.kill(res_.sandbox_id); !st) return st;
      auto after = podman_.wait(res_.sandbox_id, 10000);
      outcome_.exit_code = after ? *after : 137;
      return ok_status();
    }
    if (!code) return code.error();
    outcome_.exit_code = *code;
    return ok_status();
  }

  Status logs() {
    // The sandbox itself caps its output at log_bytes and appends the cut
    // marker (sandbox_command); the read budget leaves room for the marker.
    // A process that bypasses the pipe (writes to PID 1's stdout) still meets
    // the read cap here and the log file cap in podman.
    const auto cap = static_cast<std::size_t>(policy_.log_bytes) + 4096;
    auto raw = podman_.logs(res_.sandbox_id, cap);
    if (!raw) return raw.error();
    DemuxedLogs d = demux_logs(raw->body, cap);
    // The isolation probe's block comes first; it is evidence, not test output.
    const ProbeReport probe = take_probe(to_valid_utf8(d.combined), &res_.test_output);
    const auto violations = probe_violations(probe, policy_, runtime_);
    res_.isolation_probe = probe_to_json(probe, violations);
    if (!violations.empty()) {
      std::string all;
      for (const auto& v : violations) all += (all.empty() ? "" : "; ") + v;
      return engine_error(kProbeViolation + all +
                          "; the verdict is void");
    }
    output_for_verdict_ = res_.test_output;
    const bool cut_in_sandbox = res_.test_output.find(kOutputCutMarker) != std::string::npos;
    const bool cut_here = d.truncated || raw->body_truncated;
    res_.test_output_truncated = cut_in_sandbox || cut_here;
    if (cut_here && !cut_in_sandbox) {
      res_.test_output += "\n" + std::string(kOutputCutMarker) + " at " + std::to_string(cap) + " bytes]\n";
    }
    return ok_status();
  }

  Status remove() {
    if (auto st = guard_.remove_now(); !st) return st;
    copy_guard_.remove_now();
    return ok_status();
  }

  void judge_and_save() {
    outcome_.timeout_seconds = req_.timeout_seconds;
    outcome_.output_truncated = res_.test_output_truncated;
    res_.test_exit_code = outcome_.exit_code;
    const Verdict v = judge(outcome_, output_for_verdict_);
    res_.tests_passed = v.passed;
    res_.reason = v.reason;
    res_.tests = parse_test_cases(output_for_verdict_);
    res_.status = v.passed ? "passed" : "failed";
    save(res_.status);
  }

  void cleanup() {
    release_slot();
    (void)guard_.remove_now();
    copy_guard_.remove_now();
  }

  void save(const std::string& status) {
    // A record we cannot write must not hide the verdict.
    (void)store_.write(record_of(req_, res_, status, error_, error_category_));
  }

  void record_error(const std::string& status, const std::string& message) {
    error_ = message;
    res_.status = status;
    save(status);
  }

  const TestRequest& req_;
  PodmanClient& podman_;
  const RunStore& store_;
  const ProgressFn& progress_;
  ContainerGuard guard_;
  TreeGuard copy_guard_;
  TestResult res_;
  SandboxPolicy policy_;
  std::string runtime_;
  SandboxRequest sreq_;
  Patch patch_;
  SeedSnapshot seed_;
  std::string seed_copy_;
  std::string seccomp_path_;
  RunOutcome outcome_;
  std::string output_for_verdict_;
  std::string error_;
  std::string error_category_;
  bool slot_held_ = false;
};

}  // namespace

Result<TestResult> run_test(const TestRequest& req, PodmanClient& podman, const RunStore& store,
                            const ProgressFn& progress) {
  TestPipeline p(req, podman, store, progress);
  return p.run();
}

}  // namespace lazyagent
