#include "pipeline/triage_run.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "pipeline/attest_run.h"
#include "util/digest.h"
#include "util/file_lock.h"
#include "util/interrupt.h"
#include "contract/runner_driver.h"
#include "contract/test_report.h"
#include "policy/sandbox_policy.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

std::string baseline_key(const std::string& seed_sha256, const std::string& test_command,
                         const std::string& image_digest, const std::string& runtime) {
  return sha256_hex(seed_sha256 + "\n" + test_command + "\n" + image_digest +
                    (runtime.empty() ? "" : "\n" + runtime));
}

namespace {

// One sandbox run, retried once (by default) after an infrastructure failure.
Result<RunResult> run_with_retry(ProofRequest req, int retries, Engine& engine, const RunStore& store,
                                  const ProgressFn& progress) {
  auto r = prove(req, engine, store, progress);
  for (int i = 0; i < retries && !r && is_infra_error(r.error()); ++i) {
    if (progress) progress("infra_error, retrying once in a fresh sandbox: " + r.error().message);
    req.run_id.clear();  // a new run id: the failed run keeps its record
    r = prove(req, engine, store, progress);
  }
  if (!r && is_infra_error(r.error())) {
    const std::string retried = retries > 0 ? ", retried " + std::to_string(retries) + "x" : "";
    Error e = r.error();  // keeps the ids (run_id, ...) of the last run
    e.message = "infra_error (not a test failure" + retried + "): " + e.message;
    return e;
  }
  return r;
}

std::string evidence_of(const ProofRequest& req) {
  // The evidence read (the output, a JUnit file, the runner's report the tool
  // asked for) is part of what the baseline is.
  return "\nreport: " + report_mode(req.config.report);
}

Baseline from_cache(const json& cached) {
  Baseline b;
  b.ok = b.cached = true;
  b.summary = cached;
  b.summary.erase("output_tail");
  b.summary["cached"] = true;
  b.cases = cases_from_json(cached.value("tests", json()));
  b.runner = runner_report_from_json(cached.value("runner", json()));
  b.output_tail = cached.value("output_tail", std::string());
  return b;
}

// The baseline run itself, cached under the key its own result gives.
Baseline run_and_cache(const ProofRequest& req, const JudgeOptions& opt, Engine& engine, const RunStore& store,
                       const ProgressFn& progress) {
  Baseline b;
  if (progress) progress("baseline: the seed's tests without the patch");
  ProofRequest breq = req;
  breq.baseline = true;
  breq.patch_json.clear();
  breq.run_id.clear();
  breq.planner = nullptr;
  auto r = run_with_retry(breq, opt.infra_retries, engine, store, progress);
  if (!r) {
    b.summary = {{"error", r.error().message}};
    if (r.error().kind == ErrorKind::kUnreachable) b.outage = r.error();
    return b;
  }
  const std::string key = baseline_key(r->seed_sha256, req.config.test_command + evidence_of(req), r->image_digest,
                                       r->policy.is_object() ? r->policy.value("runtime", "") : "");
  b.ok = true;
  b.cases = r->tests;
  b.runner = r->runner;
  bool cut = false;
  b.output_tail = tail_utf8(r->test_output, kBaselineOutputBytes, cut);
  b.summary = {{"key", key},
               {"run_id", r->run_id},
               {"seed_sha256", r->seed_sha256},
               {"image_digest", r->image_digest},
               {"test_command", req.config.test_command},
               {"test_exit_code", r->test_exit_code},
               {"tests_passed", r->tests_passed},
               {"reason", r->reason},
               {"tests", cases_to_json(r->tests)},
               {"runner", runner_report_to_json(r->runner)}};
  // Only a finished verdict is cached; a timeout may be load, not the seed.
  if (r->reason.rfind("timeout", 0) != 0) {
    json cached = b.summary;
    cached["output_tail"] = b.output_tail;
    (void)store.write_in("baselines", key, cached);
  }
  b.summary["cached"] = false;
  return b;
}

// The lock held while one process runs the baseline of a key (FileLock):
// tasks of an eval that share a seed share its baseline (with --jobs 2 over
// one seed, both tasks ran it at once; on a cluster that is a second pod for
// nothing). The others wait, then find it cached. No lock (an unwritable
// store, EINTR) only costs the duplicate run.
std::string baseline_lock_path(const RunStore& store, const std::string& key) {
  const std::string dir = store.dir() + "/baselines";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
  return dir + "/" + key + ".lock";
}

Baseline baseline_for(const ProofRequest& req, const RunResult& patched, const JudgeOptions& opt,
                      Engine& engine, const RunStore& store, const ProgressFn& progress) {
  const std::string key = baseline_key(patched.seed_sha256, req.config.test_command + evidence_of(req),
                                       patched.image_digest,
                                       patched.policy.is_object() ? patched.policy.value("runtime", "") : "");
  if (auto cached = store.read_in("baselines", key); cached && cached->is_object()) return from_cache(*cached);
  std::optional<FileLock> lock;
  if (const std::string path = baseline_lock_path(store, key); !path.empty()) lock.emplace(path);
  if (auto cached = store.read_in("baselines", key); cached && cached->is_object()) return from_cache(*cached);
  return run_and_cache(req, opt, engine, store, progress);
}

// A pass that ran fewer tests than the baseline (the same runner counting the
// same unit): tests went missing (deleted, skipped, no longer collected).
std::string fewer_tests(const RunnerReport& before, const RunnerReport& after) {
  if (!before.found || !after.found || before.runner != after.runner || before.unit != after.unit ||
      after.tests_run >= before.tests_run) {
    return "";
  }
  return "fewer tests: " + after.runner + " ran " + std::to_string(after.tests_run) + " " + after.unit +
         ", the baseline ran " + std::to_string(before.tests_run);
}

std::string comma_joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

Result<RunResult> prove_judged(const ProofRequest& req, const JudgeOptions& opt, Engine& engine,
                                   const RunStore& store, const ProgressFn& progress) {
  auto first = run_with_retry(req, opt.infra_retries, engine, store, progress);
  if (!first) return first;
  if (first->status == RunStatus::kRefused) return first;

  std::vector<RunResult> runs = {*first};
  std::string rerun_note;
  for (int i = 0; i < opt.rerun && !runs.back().tests_passed; ++i) {
    if (progress) progress("rerun " + std::to_string(i + 1) + " of " + std::to_string(opt.rerun) + ": the verdict was a failure");
    ProofRequest again = req;
    again.run_id.clear();
    auto r = run_with_retry(again, opt.infra_retries, engine, store, progress);
    if (!r) {
      // An outage cuts the judgement short: no verdict from the runs so far.
      if (r.error().kind == ErrorKind::kInterrupted || r.error().kind == ErrorKind::kIsolation ||
          r.error().kind == ErrorKind::kUnreachable) {
        return r.error();
      }
      rerun_note = r.error().message;  // the runs so far still stand
      break;
    }
    runs.push_back(*r);
  }
  std::size_t deciding = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].tests_passed) {
      deciding = i;
      break;
    }
  }
  RunResult res = runs[deciding];

  Baseline base;
  if (opt.baseline && opt.known) base = *opt.known;
  else if (opt.baseline) base = baseline_for(req, *first, opt, engine, store, progress);
  if (auto st = check_interrupted(); !st) return st.error();
  if (base.outage) return base.outage->context("the baseline");
  std::vector<TestCases> cases;
  for (const auto& r : runs) cases.push_back(r.tests);
  const Triage t = triage(base.ok ? base.cases : TestCases{}, cases);
  // Flakiness is visible without a baseline too.
  std::vector<std::string> flaky = t.flaky;
  if (!base.ok) flaky = triage(cases[0], cases).flaky;

  json tj = triage_to_json(t);
  tj["flaky"] = flaky;
  tj["baseline"] = opt.baseline ? base.summary : json("off");
  json run_list = json::array();
  for (const auto& r : runs) {
    run_list.push_back({{"run_id", r.run_id},
                        {"test_exit_code", r.test_exit_code},
                        {"tests_passed", r.tests_passed},
                        {"reason", r.reason}});
  }
  tj["runs"] = run_list;
  if (!rerun_note.empty()) tj["rerun_stopped"] = rerun_note;

  if (res.tests_passed && t.available && !(t.newly_broken.empty() && t.still_failing.empty())) {
    res.tests_passed = false;
    res.status = RunStatus::kFailed;
    res.reason = !t.newly_broken.empty()
                     ? "newly broken: " + comma_joined(t.newly_broken) + " passed before the patch and not after"
                     : "not fixed: " + comma_joined(t.still_failing) + " failed before the patch and is skipped now";
  }
  if (const std::string fewer = base.ok ? fewer_tests(base.runner, res.runner) : "";
      res.tests_passed && !fewer.empty()) {
    res.tests_passed = false;
    res.status = RunStatus::kFailed;
    res.reason = fewer;
  }
  res.category = res.tests_passed ? (flaky.empty() ? Category::kPassed : Category::kFlaky) : Category::kFailed;
  tj["verdict"] = category_name(res.category);
  res.triage = tj;
  if (req.signer && is_signed_verdict(res)) {
    // sign: on the host, after the sandbox is gone (attest_run.h).
    const auto t0 = std::chrono::steady_clock::now();
    auto a = sign_verdict(req, res, engine.name(), *req.signer, store);
    if (!a) return a.error().context("signing the verdict of run " + res.run_id).with_id("run_id", res.run_id);
    res.attestation = std::move(a->attestation);
    res.attestation_envelope = std::move(a->envelope);
    res.timings.push_back({"sign", static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                         std::chrono::steady_clock::now() - t0)
                                                         .count())});
    if (progress) progress("sign: verdict signed with key " + req.signer->keyid().substr(0, 16));
  }
  (void)write_result_record(store, engine, req, &res);
  return res;
}

Result<Baseline> run_baseline(const ProofRequest& req, const std::string& seed_sha256, const JudgeOptions& opt,
                              Engine& engine, const RunStore& store, const ProgressFn& progress) {
  // The key's parts a run would give, known before it on podman (Kubernetes
  // tells the image digest only after a run: then no lookup, the run caches).
  SandboxPolicy policy = policy_from_config(req.config, req.timeout_seconds);
  engine.adapt_policy(&policy);
  const json pj = engine.policy_json(policy, req.config);
  auto digest = engine.image_digest(policy.image);
  if (digest && !digest->empty()) {
    const std::string key = baseline_key(seed_sha256, req.config.test_command + evidence_of(req), *digest,
                                         pj.is_object() ? pj.value("runtime", "") : "");
    // A cache from before the output's tail was kept is run again once.
    if (auto cached = store.read_in("baselines", key); cached && cached->is_object() && cached->contains("output_tail")) {
      return from_cache(*cached);
    }
  }
  Baseline b = run_and_cache(req, opt, engine, store, progress);
  if (auto st = check_interrupted(); !st) return st.error();
  return b;
}

}  // namespace lazyagent
