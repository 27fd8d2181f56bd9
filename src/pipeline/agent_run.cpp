#include "pipeline/agent_run.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sstream>

#include "store/ownership.h"
#include "pipeline/sandbox_run.h"
#include "pipeline/planner_run.h"
#include "contract/planner_task.h"
#include "contract/seed_snapshot.h"
#include "util/elapsed.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// The record of an attempt before (or instead of) its sandbox run.
void save_record(const RunStore& store, const Engine& engine, const std::string& run_id, RunStatus status,
                 const Config& config, const json& planner, const std::string& error) {
  RunResult r;
  r.run_id = run_id;
  r.status = status;
  r.planner = planner;
  RecordInfo info;
  info.kind = RunKind::kRun;
  info.seed = config.seed;
  info.test_command = config.test_command;
  info.error = error;
  info.backend = engine.name();
  (void)store.write(run_record(r, info));
}

struct Attempt {
  RunResult result;
  long tokens = 0;
  std::string patch_json;  // what the planner returned ("" when refused)
};

// One planner + sandbox round. Errors: provider (exit 3), engine, interrupt.
Result<Attempt> attempt_once(const RunRequest& req, const SeedSnapshot& seed, const std::string& run_id,
                             const AttemptFeedback& feedback, const BaselineFacts& baseline, Engine& engine,
                             const RunStore& store, const ProgressFn& progress) {
  const std::string task_id = "t-" + run_id.substr(2);
  PlannerTask task = build_task(seed, req.config, req.instruction, task_id,
                                static_cast<std::size_t>(req.config.planner.context_bytes), &feedback, &baseline);
  task.feedback = feedback;
  task.loop.max_tokens = req.max_tokens;  // --max-tokens bounds the tool loop's turns too
  json planner = {{"task_id", task_id}, {"status", "running"}};
  save_record(store, engine, run_id, RunStatus::kPlanning, req.config, planner, "");
  auto plan_event = [&](RunEvent::Kind kind, long ms, bool ok) {
    if (!req.events) return;
    RunEvent e;
    e.kind = kind;
    e.run_id = run_id;
    e.step = "plan";
    e.ms = ms;
    e.ok = ok;
    req.events(e);
  };
  plan_event(RunEvent::Kind::kStepStart, 0, true);
  const auto plan_t0 = std::chrono::steady_clock::now();
  auto outcome = run_planner(engine, store, req.config, task, seed, run_id, progress);
  plan_event(RunEvent::Kind::kStepEnd, outcome ? outcome->ms : ms_since(plan_t0),
             outcome && outcome->exit_code == 0 && !outcome->timed_out);
  if (!outcome) {
    save_record(store, engine, run_id,
                outcome.error().kind == ErrorKind::kInterrupted ? RunStatus::kInterrupted : RunStatus::kError,
                req.config, planner, outcome.error().message);
    return outcome.error().context("run " + run_id).with_id("run_id", run_id);
  }
  planner = task_record(*outcome, run_id);
  Attempt a;
  a.tokens = planner["usage"].is_object() ? planner["usage"].value("total_tokens", 0L) : 0L;

  if (outcome->exit_code == 4) {  // the planner refused the model's reply: no sandbox
    RunResult& r = a.result;
    r.run_id = run_id;
    r.status = RunStatus::kRefused;
    r.category = Category::kRefused;
    r.planner = planner;
    r.reason = "patch refused by the planner";
    r.findings = findings_from_json(planner["findings"]);
    for (std::size_t i = 0; i < r.findings.size(); ++i)
      r.reason += (i == 0 ? ": " : "; ") + r.findings[i].code + " " + r.findings[i].message;
    r.timings.push_back({"plan", outcome->ms});
    save_record(store, engine, run_id, RunStatus::kRefused, req.config, planner, r.reason);
    return a;
  }
  if (outcome->exit_code != 0 || outcome->timed_out) {
    // The task record exists now (`task show`): the error names it.
    const Error e = planner_error(*outcome).with_id("run_id", run_id).with_id("planner_task_id", task_id);
    save_record(store, engine, run_id, RunStatus::kPlannerError, req.config, planner, e.message);
    return e;
  }

  a.patch_json = outcome->patch_json;
  ProofRequest test;
  test.config = req.config;
  test.patch_json = outcome->patch_json;
  test.timeout_seconds = req.timeout_seconds;
  test.run_id = run_id;
  test.planner = planner;
  test.engine_checked = true;
  test.events = req.events;
  test.signer = req.signer;
  auto result = prove_judged(test, req.judge, engine, store, progress);
  if (!result) return result.error().with_id("run_id", run_id).with_id("planner_task_id", task_id);
  result->timings.insert(result->timings.begin(), StepTiming{"plan", outcome->ms});
  a.result = std::move(*result);
  return a;
}

// What the next attempt's planner is told about this one.
AttemptFeedback feedback_from(int attempt, const RunResult& r, const std::string& patch_json) {
  std::string reason = r.reason;
  if (r.triage.is_object()) {
    for (const char* k : {"fixed", "still_failing", "newly_broken", "flaky"}) {
      const json& list = r.triage[k];
      if (!list.is_array() || list.empty()) continue;
      reason += std::string("; ") + k + ":";
      for (const auto& id : list) reason += " " + id.get<std::string>();
    }
  }
  return bounded_feedback(attempt, reason, patch_json, r.test_output);
}

// The baseline before the planner (config planner.baseline_first): its
// failing tests and output's tail go into the task, and the judge reuses it.
// Runs in a sandbox like every test run: the planner never runs code.
Status baseline_first(RunRequest& req, const SeedSnapshot& seed, Engine& engine, const RunStore& store,
                      const ProgressFn& progress, BaselineFacts* facts, long* ms) {
  const auto t0 = std::chrono::steady_clock::now();
  ProofRequest breq;
  breq.config = req.config;
  breq.timeout_seconds = req.timeout_seconds;
  breq.engine_checked = true;
  breq.events = req.events;
  auto b = run_baseline(breq, seed.sha256, req.judge, engine, store, progress);
  if (!b) return b.error();
  if (b->outage) return b->outage->context("the baseline");  // cut short: nothing to plan from
  *ms = ms_since(t0);
  if (b->ok && !b->summary.value("tests_passed", false)) {
    std::vector<std::string> failing;
    for (const auto& c : b->cases.cases) {
      if (c.outcome == TestOutcome::kFailed) failing.push_back(c.id);
    }
    *facts = bounded_baseline(failing, failing.size(), b->output_tail);
  }
  req.judge.known = std::make_shared<const Baseline>(std::move(*b));
  return ok_status();
}

}  // namespace

Result<RunResult> run_agent(const RunRequest& req, Engine& engine, const RunStore& store,
                             const ProgressFn& progress, bool engine_checked) {
  if (auto st = store.ensure(); !st) return st.error();
  if (progress) progress("plan");
  // The planner's view: the seed's own file list (seed_source.h), the same
  // list the sandbox's copy and the provenance manifest use.
  auto seed = snapshot_seed_source(req.config.seed, req.config.seed_options);
  if (!seed) return seed.error().context("reading the seed");
  if (!engine_checked) {
    if (auto st = engine.check(progress); !st) return st.error();
  }
  // The planner's prerequisites (its secrets, a rootless host's network
  // device) before the baseline spends a sandbox run on a run that cannot plan.
  if (auto st = engine.check_planner(req.config); !st) return st.error();

  RunRequest run = req;
  BaselineFacts facts;
  long baseline_ms = -1;
  if (req.judge.baseline && req.config.planner.baseline_first) {
    if (auto st = baseline_first(run, *seed, engine, store, progress, &facts, &baseline_ms); !st) return st.error();
  }
  const int n = std::max(1, req.attempts);
  json attempts = json::array();
  json total = {{"prompt_tokens", 0L}, {"completion_tokens", 0L}, {"total_tokens", 0L}};
  AttemptFeedback feedback;
  std::string stop_reason;
  RunResult last;
  for (int i = 1; i <= n; ++i) {
    if (n > 1 && progress) progress("attempt " + std::to_string(i) + " of " + std::to_string(n));
    const std::string run_id = new_run_id();
    auto a = attempt_once(run, *seed, run_id, feedback, facts, engine, store, progress);
    if (!a) {
      if (n == 1) return a.error();
      return a.error().context("attempt " + std::to_string(i) + " of " + std::to_string(n));
    }
    last = std::move(a->result);
    if (i == 1 && baseline_ms >= 0) last.timings.insert(last.timings.begin(), StepTiming{"baseline", baseline_ms});
    const json usage = last.planner.is_object() ? last.planner.value("usage", json::object()) : json::object();
    for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"}) {
      total[k] = total[k].get<long>() + (usage.is_object() ? usage.value(k, 0L) : 0L);
    }
    attempts.push_back({{"attempt", i},
                        {"run_id", last.run_id},
                        {"planner_task_id", last.planner.is_object() ? last.planner.value("task_id", "") : ""},
                        {"patch_sha256", last.patch_sha256.empty() && last.planner.is_object()
                                             ? last.planner.value("patch_sha256", "")
                                             : last.patch_sha256},
                        {"verdict", last.category == Category::kNone ? status_name(last.status)
                                                                     : category_name(last.category)},
                        {"test_exit_code", last.test_exit_code},
                        {"tokens", a->tokens},
                        {"reason", last.tests_passed ? "" : last.reason}});
    if (last.tests_passed) {
      stop_reason = "passed";
      break;
    }
    if (i == n) {
      stop_reason = n == 1 ? "" : "attempts_exhausted";
      break;
    }
    const long used = total["total_tokens"].get<long>();
    if (req.max_tokens > 0 && used >= req.max_tokens) {
      stop_reason = "max_tokens";
      last.reason = "stopped after attempt " + std::to_string(i) + " of " + std::to_string(n) +
                    ": the provider used " + std::to_string(used) + " tokens, at or over --max-tokens " +
                    std::to_string(req.max_tokens) + " (last attempt: " + last.reason + ")";
      break;
    }
    feedback = feedback_from(i, last, a->patch_json);
  }
  if (n > 1 || req.max_tokens > 0) {
    last.repair = {{"attempts", attempts}, {"stop_reason", stop_reason}, {"total_usage", total},
                   {"max_tokens", req.max_tokens}};
    ProofRequest rec_req;
    rec_req.config = req.config;
    rec_req.planner = last.planner;
    (void)write_result_record(store, engine, rec_req, &last);
  }
  return last;
}

}  // namespace lazyagent
