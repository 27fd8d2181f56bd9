#include "pipeline/sandbox_run.h"

#include <chrono>

#include "contract/change_set.h"
#include "engine/warm_pool.h"
#include "util/digest.h"
#include "util/elapsed.h"
#include "util/interrupt.h"
#include "policy/isolation_probe.h"
#include "store/ownership.h"
#include "contract/patch_contract.h"
#include "store/provenance.h"
#include "contract/seed_snapshot.h"
#include "contract/seed_source.h"
#include "util/terminal_text.h"
#include "pipeline/crash_pause.h"
#include "contract/verdict.h"
#include "contract/junit_report.h"
#include "contract/runner_driver.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// The command a sandbox of `config` runs for a report nonce (runner_driver.h).
std::function<std::string(const std::string&)> evidence_command_for(const Config& config) {
  return [command = config.test_command, report = config.report](const std::string& nonce) {
    return plan_evidence(command, report, nonce).command;
  };
}

RecordInfo record_info(const Engine& engine, const ProofRequest& req) {
  RecordInfo info;
  info.kind = req.baseline ? RunKind::kBaseline : req.planner.is_object() ? RunKind::kRun : RunKind::kTest;
  info.seed = absolute_seed_path(req.config.seed);
  info.test_command = req.config.test_command;
  info.backend = engine.name();
  return info;
}

class ProofPipeline {
 public:
  ProofPipeline(const ProofRequest& req, Engine& engine, const RunStore& store, const ProgressFn& progress)
      : req_(req), engine_(engine), store_(store), progress_(progress), info_(record_info(engine, req)) {}

  Result<RunResult> run() {
    res_.run_id = req_.run_id.empty() ? new_run_id() : req_.run_id;
    res_.planner = req_.planner;
    policy_ = policy_from_config(req_.config, req_.timeout_seconds);
    engine_.adapt_policy(&policy_);
    res_.image = policy_.image;
    res_.environment = environment_json(req_.config.environment);
    // A demanded limit the runtime cannot enforce refuses the run before
    // anything exists, unless the weaker policy was accepted explicitly.
    if (auto st = engine_.check_policy(req_.config); !st) return st.error();
    res_.policy = engine_.policy_json(policy_, req_.config);
    if (auto st = store_.ensure(); !st) return st.error();
    save();
    auto st = steps();
    if (!st) {
      cleanup();
      res_.status = st.error().kind == ErrorKind::kInterrupted ? RunStatus::kInterrupted : RunStatus::kError;
      info_.error = st.error().message;
      info_.category = category_of(st.error());
      save();
      return st.error().context("run " + res_.run_id).with_id("run_id", res_.run_id).with_id("sandbox_id", res_.sandbox_id);
    }
    return res_;
  }

 private:
  using Step = Status (ProofPipeline::*)();

  Status steps() {
    if (auto st = timed("validate", &ProofPipeline::validate); !st || refused()) return st;
    if (auto st = timed("snapshot", &ProofPipeline::snapshot); !st || refused()) return st;
    for (auto [name, fn] : std::initializer_list<std::pair<const char*, Step>>{
             {"engine", &ProofPipeline::check_engine}, {"image", &ProofPipeline::image},
             {"copy", &ProofPipeline::copy},           {"create", &ProofPipeline::create},
             {"verify", &ProofPipeline::verify},       {"run", &ProofPipeline::start_and_wait},
             {"logs", &ProofPipeline::logs},           {"remove", &ProofPipeline::remove}}) {
      if (fn == &ProofPipeline::start_and_wait && req_.acquire_run_slot) {
        if (auto st = timed("queue", &ProofPipeline::acquire_slot); !st) return st;
      }
      if (auto st = timed(name, fn); !st) return st;
    }
    judge_and_save();
    return ok_status();
  }

  Status timed(const char* step, Step fn) {
    if (progress_) progress_(step);
    emit(RunEvent::Kind::kStepStart, step);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = (this->*fn)();
    res_.timings.push_back({step, ms_since(t0)});
    emit(RunEvent::Kind::kStepEnd, step, res_.timings.back().ms, st.ok());
    if (st) crash_pause_point(std::string("after:") + step);
    if (st) return check_interrupted();
    return st;
  }

  bool refused() const { return res_.status == RunStatus::kRefused; }

  void emit(RunEvent::Kind kind, const std::string& step, long ms = 0, bool ok = true) {
    if (!req_.events) return;
    RunEvent e;
    e.kind = kind;
    e.run_id = res_.run_id;
    e.step = step;
    e.ms = ms;
    e.ok = ok;
    e.baseline = req_.baseline;
    req_.events(e);
  }

  // One line of the test's output as it arrives (from the engine's log
  // follower thread): the probe's block, which comes first, left out;
  // valid UTF-8; at most kStreamedLineBytes a line and kStreamedOutputBytes
  // in all, then one event saying the rest is not streamed.
  void stream_line(const std::string& raw) {
    if (streamed_ > kStreamedOutputBytes) return;
    if (!past_probe_) {
      if (raw.rfind("lazyagent-probe: ", 0) == 0) return;
      past_probe_ = true;
    }
    // The report the runner's driver prints after the tests (junit_report.h)
    // is evidence, not output: the stream ends there.
    if (raw.rfind("lazyagent-oci junit-report: ", 0) == 0) {
      streamed_ = kStreamedOutputBytes + 1;
      return;
    }
    RunEvent e;
    e.kind = RunEvent::Kind::kOutput;
    e.run_id = res_.run_id;
    e.baseline = req_.baseline;
    if (streamed_ + raw.size() > kStreamedOutputBytes) {
      streamed_ = kStreamedOutputBytes + 1;
      e.truncated = true;
      e.text = "[output past " + std::to_string(kStreamedOutputBytes) + " bytes is not streamed; the result holds it]";
      req_.events(e);
      return;
    }
    streamed_ += raw.size() + 1;
    std::string line = to_valid_utf8(raw.substr(0, kStreamedLineBytes));
    e.truncated = raw.size() > kStreamedLineBytes;
    e.text = std::move(line);
    req_.events(e);
  }

  // The patch in its form (patch_format.h: whole files or a unified diff),
  // judged by the contract without the seed; stored as it came.
  Status validate() {
    if (req_.baseline) {  // the seed as it is: no patch
      res_.baseline = true;
      return ok_status();
    }
    check_ = check_patch_text(req_.patch_json, contract_limits(req_.config));
    res_.patch_format = patch_format_name(check_.format);
    res_.patch_sha256 = check_.sha256;
    res_.suspicious = check_.suspicious;  // a diff's: once it is applied (snapshot)
    // The patch as proven (or refused), kept for `verify` (provenance.h).
    if (auto st = store_.write_text(kArtifactsDir, patch_artifact_name(res_.run_id, res_.patch_format), check_.stored);
        !st) {
      return st.error().context("storing the patch");
    }
    if (!check_.ok()) refuse(std::move(check_.findings));
    return ok_status();
  }

  // The seed as its source lists it (seed_source.h: a directory or a git
  // work tree, streamed), then the patch resolved against it (change_set.h:
  // a diff applied to the snapshot's files, never to the user's directory)
  // and the proven change stored as a unified diff. Every engine gets the
  // same change (copy_writes) in `copy`.
  Status snapshot() {
    auto snap = snapshot_seed_source(req_.config.seed, req_.config.seed_options);
    if (!snap) return snap.error().context("reading the seed");
    seed_ = std::move(*snap);
    res_.seed_sha256 = seed_.sha256;
    res_.seed_source = seed_summary_json(seed_, false);
    res_.seed_source.erase("root");
    res_.seed_source["exclude"] = req_.config.seed_options.exclude;
    res_.seed_source["include_git"] = req_.config.seed_options.include_git;
    if (auto st = store_.write_text(kArtifactsDir, seed_manifest_artifact_name(res_.run_id),
                                    seed_manifest(seed_).dump(1) + "\n");
        !st) {
      return st.error().context("storing the seed manifest");
    }
    if (req_.baseline) return ok_status();
    ChangeResult c = resolve_changes(check_, seed_);
    if (!c.ok()) {
      refuse(std::move(c.findings));
      return ok_status();
    }
    changes_ = std::move(c.changes);
    if (check_.format == PatchFormat::kDiff) {
      res_.suspicious = changes_.suspicious;
      if (!res_.suspicious.empty() && contract_limits(req_.config).refuse_suspicious) {
        refuse(res_.suspicious);
        return ok_status();
      }
    }
    res_.changed_paths = changed_paths(changes_);
    res_.change = change_summary_json(changes_);
    for (const std::string& note : changes_.notes) {
      if (progress_) progress_("patch: " + note);
    }
    res_.diff_sha256 = sha256_hex(changes_.diff);
    if (auto st = store_.write_text(kArtifactsDir, diff_artifact_name(res_.run_id), changes_.diff); !st) {
      return st.error().context("storing the proven diff");
    }
    return ok_status();
  }

  void refuse(std::vector<Finding> findings) {
    res_.findings = std::move(findings);
    res_.status = RunStatus::kRefused;
    res_.category = Category::kRefused;
    res_.reason = "patch refused: " + std::to_string(res_.findings.size()) + " finding(s)";
    save();
  }

  Status check_engine() { return req_.engine_checked ? ok_status() : engine_.check(progress_); }

  Status image() {
    auto digest = engine_.image_digest(policy_.image);
    if (!digest) return digest.error();
    res_.image_digest = *digest;
    return ok_status();
  }

  Status copy() {
    SandboxSpec spec;
    spec.run_id = res_.run_id;
    spec.progress = progress_;
    // With a report as evidence (the user's JUnit file, or one the tool has
    // the runner write: runner_driver.h) the sandbox runs the command that
    // prints it after the tests (junit_report.h); records keep the user's command.
    run_config_ = req_.config;
    evidence_ = plan_evidence(req_.config.test_command, req_.config.report, random_nonce());
    run_config_.test_command = evidence_.command;
    if (!evidence_.note.empty() && progress_) progress_("evidence: output: " + evidence_.note);
    spec.config = &run_config_;
    spec.policy = policy_;
    spec.seed = &seed_;
    writes_ = copy_writes(changes_);
    spec.writes = &writes_;
    spec.image_digest = res_.image_digest;
    spec.command_for = evidence_command_for(req_.config);
    if (req_.events) spec.output = [this](const std::string& line) { stream_line(line); };
    auto sandbox = engine_.prepare_sandbox(spec);
    if (!sandbox) return sandbox.error();
    sandbox_ = std::move(*sandbox);
    // A warm spare was made with its own nonce: the run's evidence uses it.
    if (const SpareClaim* spare = sandbox_->spare(); spare != nullptr && !spare->report_nonce.empty()) {
      evidence_ = plan_evidence(req_.config.test_command, req_.config.report, spare->report_nonce);
      run_config_.test_command = evidence_.command;
      res_.warm = spare->warm;
    }
    return ok_status();
  }

  Status create() {
    if (auto st = sandbox_->create(); !st) return st.error().context("creating the sandbox");
    res_.sandbox_id = sandbox_->id();
    save();
    return ok_status();
  }

  Status verify() { return sandbox_->verify(); }

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
    if (auto st = sandbox_->start(); !st) return st;
    crash_pause_point("after:start");
    auto exit = sandbox_->wait(static_cast<long>(req_.timeout_seconds) * 1000);
    if (!exit) return exit.error();
    exit_ = *exit;
    res_.resources = sandbox_->resources();
    res_.sandbox_id = sandbox_->id();
    if (res_.image_digest.empty()) res_.image_digest = exit_.image_digest;
    return ok_status();
  }

  Status logs() {
    // The sandbox itself caps its output at log_bytes and appends the cut
    // marker (sandbox_command); the read budget leaves room for the marker.
    // A process that bypasses the pipe (writes to PID 1's stdout) still meets
    // the read cap here and the engine's own log cap.
    const auto cap = static_cast<std::size_t>(policy_.log_bytes) + 4096;
    auto logs = sandbox_->logs(cap);
    if (!logs) return logs.error();
    // The isolation probe's block comes first; it is evidence, not test output.
    const ProbeReport probe = take_probe(to_valid_utf8(logs->combined), &res_.test_output);
    std::vector<std::string> notes;
    const auto violations = sandbox_->probe_violations(probe, exit_.timed_out, &notes);
    res_.isolation_probe = probe_to_json(probe, violations);
    if (!notes.empty()) res_.isolation_probe["notes"] = notes;
    res_.policy = sandbox_->policy_json(res_.policy);
    if (!violations.empty()) {
      std::string all;
      for (const auto& v : violations) all += (all.empty() ? "" : "; ") + v;
      return Error{ErrorKind::kIsolation,
                   "the isolation probe inside the sandbox found: " + all + "; the verdict is void"};
    }
    output_for_verdict_ = res_.test_output;
    const bool cut_in_sandbox = res_.test_output.find(kOutputCutMarker) != std::string::npos;
    res_.test_output_truncated = cut_in_sandbox || logs->truncated;
    if (logs->truncated && !cut_in_sandbox) {
      res_.test_output += "\n" + std::string(kOutputCutMarker) + " " + logs->cut_where + "]\n";
    }
    return ok_status();
  }

  Status remove() {
    if (auto st = sandbox_->remove(); !st) return st;
    if (sandbox_->removal_deferred()) res_.removal = "deferred";
    return ok_status();
  }

  void judge_and_save() {
    RunOutcome outcome;
    outcome.exit_code = exit_.exit_code;
    outcome.timed_out = exit_.timed_out;
    outcome.timeout_seconds = req_.timeout_seconds;
    outcome.output_truncated = res_.test_output_truncated;
    res_.test_exit_code = outcome.exit_code;
    Verdict v;
    res_.evidence = evidence_name(evidence_.kind);
    res_.evidence_note = evidence_.note;
    if (evidence_.kind != EvidenceKind::kOutput) {
      (void)take_junit_dump(&res_.test_output);  // the log shown keeps the tests' output only
      const JunitDump dump = take_junit_dump(&output_for_verdict_);
      const JunitReport junit = dump.error.empty() ? parse_junit_xml(dump.xml) : JunitReport{};
      const std::string why = !dump.error.empty() ? dump.error : junit.error;
      std::string missing;
      if (evidence_.kind == EvidenceKind::kJunit) {
        if (!why.empty()) missing = "the JUnit report " + evidence_.report_path + ": " + why;
      } else if (dump.missing) {
        missing = kDriverReportMissing;
        outcome.runner_missing = missing_runner_line(output_for_verdict_, evidence_.runner);
      } else if (!why.empty()) {
        missing = "the " + evidence_.runner + " report the tool asked for: " + why;
      }
      v = judge_report(outcome, junit.report, missing);
      res_.tests = junit.cases;
    } else {
      v = judge(outcome, output_for_verdict_);
      res_.tests = parse_test_cases(output_for_verdict_);
    }
    res_.tests_passed = v.passed;
    res_.reason = v.reason;
    res_.runner = v.report;
    res_.status = v.passed ? RunStatus::kPassed : RunStatus::kFailed;
    save();
  }

  void cleanup() {
    release_slot();
    if (sandbox_) (void)sandbox_->remove();
  }

  void save() {
    // A record we cannot write must not hide the verdict.
    const nlohmann::json rec = run_record(res_, info_);
    res_.provenance = rec["provenance"];
    (void)store_.write(rec);
  }

  const ProofRequest& req_;
  Engine& engine_;
  const RunStore& store_;
  const ProgressFn& progress_;
  RecordInfo info_;
  RunResult res_;
  SandboxPolicy policy_;
  PatchCheck check_;
  ChangeSet changes_;
  std::vector<FileWrite> writes_;  // copy_writes(changes_), for the engine
  SeedSnapshot seed_;
  EvidencePlan evidence_;  // what decides the verdict, and the command that gets it
  Config run_config_;  // req_.config with the command the sandbox really runs (outlives sandbox_)
  std::unique_ptr<Sandbox> sandbox_;
  ContainerExit exit_;
  std::string output_for_verdict_;
  bool slot_held_ = false;
  // stream_line's state (only the follower thread touches it, during `run`).
  std::size_t streamed_ = 0;
  bool past_probe_ = false;
};

}  // namespace

Status write_result_record(const RunStore& store, const Engine& engine, const ProofRequest& req, RunResult* r) {
  const nlohmann::json rec = run_record(*r, record_info(engine, req));
  r->provenance = rec["provenance"];
  return store.write(rec);
}

Result<std::vector<std::string>> keep_warm(const Config& config, long timeout_seconds, Engine& engine, int count) {
  WarmPool* pool = engine.warm_pool();
  if (pool == nullptr) return std::vector<std::string>{};  // an engine without spares
  SandboxPolicy policy = policy_from_config(config, timeout_seconds);
  engine.adapt_policy(&policy);
  if (auto st = engine.check_policy(config); !st) return st.error();
  auto digest = engine.image_digest(policy.image);
  if (!digest) return digest.error();
  if (digest->empty()) return std::vector<std::string>{};  // known only after a run: nothing to key a spare on
  SandboxSpec spec;
  spec.config = &config;
  spec.policy = std::move(policy);
  spec.image_digest = *digest;
  spec.command_for = evidence_command_for(config);
  return pool->keep_warm(spec, count);
}

Result<RunResult> prove(const ProofRequest& req, Engine& engine, const RunStore& store,
                            const ProgressFn& progress) {
  ProofPipeline p(req, engine, store, progress);
  return p.run();
}

}  // namespace lazyagent
