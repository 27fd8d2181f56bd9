#include "agent_run.h"

#include <algorithm>
#include <ctime>
#include <sstream>

#include "ownership.h"
#include "planner_run.h"
#include "planner_task.h"
#include "provenance.h"
#include "reaper.h"
#include "seed_snapshot.h"

namespace lazyagent {

using nlohmann::json;

namespace {

void save_record(const RunStore& store, const std::string& run_id, const std::string& status,
                 const Config& config, const json& planner, const std::string& error) {
  const Owner o = current_owner();
  json rec = {{"run_id", run_id},
              {"kind", "run"},
              {"status", status},
              {"sandbox_id", ""},
              {"tests_passed", false},
              {"planner_task_id", planner.value("task_id", "")},
              {"planner", planner},
              {"seed", config.seed},
              {"owner", {{"user_host", o.user_host}, {"pid", o.pid}, {"start_time", o.start_time}}},
              {"updated_at", static_cast<long>(std::time(nullptr))}};
  if (!error.empty()) {
    rec["error"] = error;
    rec["reason"] = error;
  }
  rec["provenance"] = build_provenance(rec);
  (void)store.write(rec);
}

// What went wrong in the planner, for the user: its summary's error, else
// its last log line (e.g. a missing secret), else its exit status.
Error planner_error(const PlannerOutcome& o) {
  std::string why = o.timed_out ? "the planner did not finish within its deadline"
                    : o.summary.is_object() ? o.summary.value("error", "")
                                            : "";
  if (why.empty()) {
    std::istringstream in(o.log);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("planner: ", 0) == 0) why = line.substr(9, 300);
    }
  }
  if (why.empty()) why = "the planner exited " + std::to_string(o.exit_code);
  return Error{ErrorKind::kPlanner, "planner task " + o.task_id + ": " + why +
                                        " (see `lazyagent-oci task logs " + o.task_id + "`)"};
}

}  // namespace

namespace {

struct Attempt {
  TestResult result;
  long tokens = 0;
  std::string patch_json;  // what the planner returned ("" when refused)
};

// One planner + sandbox round. Errors: provider (exit 3), engine, interrupt.
Result<Attempt> attempt_once(const RunRequest& req, const SeedSnapshot& seed, const std::string& run_id,
                             const AttemptFeedback& feedback, PodmanClient& podman, PodmanClient& sandbox_podman,
                             const RunStore& store, const ProgressFn& progress) {
  const std::string task_id = "t-" + run_id.substr(2);
  PlannerTask task = build_task(seed, req.config, req.instruction, task_id);
  task.feedback = feedback;
  json planner = {{"task_id", task_id}, {"status", "running"}};
  save_record(store, run_id, "planning", req.config, planner, "");
  auto outcome = run_planner(podman, store, req.config, task, run_id, progress);
  if (!outcome) {
    save_record(store, run_id, outcome.error().kind == ErrorKind::kInterrupted ? "interrupted" : "error",
                req.config, planner, outcome.error().message);
    return outcome.error().context("run " + run_id).with_id("run_id", run_id);
  }
  planner = task_record(*outcome, run_id);
  Attempt a;
  a.tokens = planner["usage"].is_object() ? planner["usage"].value("total_tokens", 0L) : 0L;

  if (outcome->exit_code == 4) {  // the planner refused the model's reply: no sandbox
    TestResult& r = a.result;
    r.run_id = run_id;
    r.status = "refused";
    r.category = "refused";
    r.planner = planner;
    r.reason = "patch refused by the planner";
    r.findings = findings_from_json(planner["findings"]);
    for (std::size_t i = 0; i < r.findings.size(); ++i)
      r.reason += (i == 0 ? ": " : "; ") + r.findings[i].code + " " + r.findings[i].message;
    r.timings.push_back({"plan", outcome->ms});
    save_record(store, run_id, "refused", req.config, planner, r.reason);
    return a;
  }
  if (outcome->exit_code != 0 || outcome->timed_out) {
    // The task record exists now (`task show`): the error names it.
    const Error e = planner_error(*outcome).with_id("run_id", run_id).with_id("planner_task_id", task_id);
    save_record(store, run_id, "planner_error", req.config, planner, e.message);
    return e;
  }

  a.patch_json = outcome->patch_json;
  TestRequest test;
  test.config = req.config;
  test.patch_json = outcome->patch_json;
  test.timeout_seconds = req.timeout_seconds;
  test.run_id = run_id;
  test.planner = planner;
  auto result = run_judged_test(test, req.judge, sandbox_podman, store, progress);
  if (!result) return result.error().with_id("run_id", run_id).with_id("planner_task_id", task_id);
  result->timings.insert(result->timings.begin(), StepTiming{"plan", outcome->ms});
  a.result = std::move(*result);
  return a;
}

// What the next attempt's planner is told about this one.
AttemptFeedback feedback_from(int attempt, const TestResult& r, const std::string& patch_json) {
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

}  // namespace

Result<TestResult> run_agent(const RunRequest& req, PodmanClient& podman, const RunStore& store,
                             const ProgressFn& progress, PodmanClient* sandbox_podman) {
  if (auto st = store.ensure(); !st) return st.error();
  if (progress) progress("plan");
  auto seed = snapshot_seed(req.config.seed);
  if (!seed) return seed.error().context("reading the seed");
  if (auto v = podman.ping(); !v) return v.error();
  if (auto reaped = reap_leftovers(podman, store, false); !reaped) return reaped.error();

  const int n = std::max(1, req.attempts);
  json attempts = json::array();
  json total = {{"prompt_tokens", 0L}, {"completion_tokens", 0L}, {"total_tokens", 0L}};
  AttemptFeedback feedback;
  std::string stop_reason;
  TestResult last;
  for (int i = 1; i <= n; ++i) {
    if (n > 1 && progress) progress("attempt " + std::to_string(i) + " of " + std::to_string(n));
    const std::string run_id = new_run_id();
    auto a = attempt_once(req, *seed, run_id, feedback, podman,
                          sandbox_podman != nullptr ? *sandbox_podman : podman, store, progress);
    if (!a) {
      if (n == 1) return a.error();
      return a.error().context("attempt " + std::to_string(i) + " of " + std::to_string(n));
    }
    last = std::move(a->result);
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
                        {"verdict", last.category.empty() ? last.status : last.category},
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
    TestRequest rec_req;
    rec_req.config = req.config;
    (void)write_result_record(store, rec_req, last);
  }
  return last;
}

}  // namespace lazyagent
