#include "agent_run.h"

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

Result<TestResult> run_agent(const RunRequest& req, PodmanClient& podman, const RunStore& store,
                             const ProgressFn& progress, PodmanClient* sandbox_podman) {
  const std::string run_id = new_run_id();
  const std::string task_id = "t-" + run_id.substr(2);
  if (auto st = store.ensure(); !st) return st.error();
  if (progress) progress("plan");
  auto seed = snapshot_seed(req.config.seed);
  if (!seed) return seed.error().context("reading the seed");
  if (auto v = podman.ping(); !v) return v.error();
  if (auto reaped = reap_leftovers(podman, store, false); !reaped) return reaped.error();

  const PlannerTask task = build_task(*seed, req.config, req.instruction, task_id);
  json planner = {{"task_id", task_id}, {"status", "running"}};
  save_record(store, run_id, "planning", req.config, planner, "");
  auto outcome = run_planner(podman, store, req.config, task, run_id, progress);
  if (!outcome) {
    save_record(store, run_id, outcome.error().kind == ErrorKind::kInterrupted ? "interrupted" : "error",
                req.config, planner, outcome.error().message);
    return outcome.error().context("run " + run_id);
  }
  planner = task_record(*outcome, run_id);

  if (outcome->exit_code == 4) {  // the planner refused the model's reply: no sandbox
    TestResult r;
    r.run_id = run_id;
    r.status = "refused";
    r.planner = planner;
    r.reason = "patch refused by the planner";
    for (const auto& f : planner["findings"]) {
      r.findings.push_back({f.value("code", ""), f.value("path", ""), f.value("message", "")});
    }
    r.timings.push_back({"plan", outcome->ms});
    save_record(store, run_id, "refused", req.config, planner, r.reason);
    return r;
  }
  if (outcome->exit_code != 0 || outcome->timed_out) {
    const Error e = planner_error(*outcome);
    save_record(store, run_id, "planner_error", req.config, planner, e.message);
    return e;
  }

  TestRequest test;
  test.config = req.config;
  test.patch_json = outcome->patch_json;
  test.timeout_seconds = req.timeout_seconds;
  test.run_id = run_id;
  test.planner = planner;
  auto result = run_test(test, sandbox_podman != nullptr ? *sandbox_podman : podman, store, progress);
  if (result) result->timings.insert(result->timings.begin(), StepTiming{"plan", outcome->ms});
  return result;
}

}  // namespace lazyagent
