// Eval: attempts -> category, the summary, the progress text, resuming.
#include "catch_compat.h"

#include <fstream>

#include "eval/eval_attempts.h"
#include "eval/eval_progress.h"
#include "eval/eval_runner.h"
#include "eval/eval_summary.h"
#include "unit_tmp.h"

using namespace lazyagent;

namespace {

RunResult result(RunStatus status, bool passed, const std::string& run_id) {
  RunResult r;
  r.status = status;
  r.tests_passed = passed;
  r.run_id = run_id;
  r.reason = passed ? "" : "tests failed: 1 of 3";
  return r;
}

// An attempt function that replays a script and counts its calls.
struct Script {
  std::vector<Result<RunResult>> replies;
  std::size_t calls = 0;
  AttemptFn fn() {
    return [this]() -> Result<RunResult> { return replies.at(calls++); };
  }
};

Result<RunResult> pass(const std::string& id = "r-p") { return result(RunStatus::kPassed, true, id); }
Result<RunResult> fail(const std::string& id = "r-f") { return result(RunStatus::kFailed, false, id); }
Result<RunResult> infra() { return engine_error("podman said 500: boom"); }

}  // namespace

TEST_CASE("eval attempts: categories, infra retry and task-level reruns") {
  Script s{{pass()}};
  TaskVerdict v = run_attempts(s.fn(), {});
  CHECK(v.category == Category::kPassed);
  CHECK(s.calls == 1);

  s = Script{{fail(), pass()}};  // no reruns asked: a failure is final
  v = run_attempts(s.fn(), {0, 1});
  CHECK(v.category == Category::kFailed);
  CHECK(s.calls == 1);

  s = Script{{fail("r-1"), fail("r-2"), pass("r-3")}};
  v = run_attempts(s.fn(), {2, 1});
  CHECK(v.category == Category::kFlaky);
  CHECK(s.calls == 3);
  REQUIRE(v.final.ok());
  CHECK(v.final->run_id == "r-3");
  REQUIRE(v.attempts.size() == 3);
  CHECK(v.attempts[0].outcome == "failed");
  CHECK(v.attempts[0].run_id == "r-1");

  s = Script{{fail(), fail(), fail()}};
  v = run_attempts(s.fn(), {2, 1});
  CHECK(v.category == Category::kFailed);
  CHECK(s.calls == 3);

  Result<RunResult> refused = result(RunStatus::kRefused, false, "r-x");
  s = Script{{refused}};
  v = run_attempts(s.fn(), {3, 1});
  CHECK(v.category == Category::kRefused);
  CHECK(s.calls == 1);  // a refusal is deterministic: never rerun

  s = Script{{infra(), pass()}};
  v = run_attempts(s.fn(), {0, 1});
  CHECK(v.category == Category::kPassed);  // the retry is not a rerun: not flaky
  CHECK(s.calls == 2);

  s = Script{{infra(), infra(), pass()}};
  v = run_attempts(s.fn(), {5, 1});
  CHECK(v.category == Category::kInfraError);
  CHECK(s.calls == 2);
  REQUIRE_FALSE(v.final.ok());
  CHECK(v.final.error().message == "podman said 500: boom");

  s = Script{{fail("r-1"), infra(), infra()}};  // broke only on the rerun: still a test failure
  v = run_attempts(s.fn(), {1, 1});
  CHECK(v.category == Category::kFailed);
  CHECK(v.final->run_id == "r-1");

  // An isolation violation is a finding about the engine: never retried.
  s = Script{{Error{ErrorKind::kIsolation, "the isolation probe inside the sandbox found: eth0"}, pass()}};
  v = run_attempts(s.fn(), {0, 1});
  CHECK(v.category == Category::kIsolationViolation);
  CHECK(s.calls == 1);
  REQUIRE(v.attempts.size() == 1);
  CHECK(v.attempts[0].outcome == "isolation_violation");

  // ... and it outranks a test failure seen before it on a rerun.
  s = Script{{fail("r-1"), Error{ErrorKind::kIsolation, "the effective config has a network"}}};
  v = run_attempts(s.fn(), {1, 1});
  CHECK(v.category == Category::kIsolationViolation);
  CHECK(s.calls == 2);
  REQUIRE_FALSE(v.final.ok());
  CHECK(v.final.error().kind == ErrorKind::kIsolation);

  s = Script{{Error{ErrorKind::kInterrupted, "interrupted by signal 2"}, pass()}};
  v = run_attempts(s.fn(), {3, 1});
  CHECK(v.interrupted);
  CHECK(s.calls == 1);
}

TEST_CASE("eval summary: counts and ids per category, skipped and not run") {
  std::vector<EvalRow> rows = {
      {"a", Category::kPassed, false, 1, 10, ""},
      {"b", Category::kFailed, true, 1, 10, "tests failed"},
      {"c", Category::kRefused, false, 1, 0, ""},
      {"d", Category::kInfraError, false, 2, 5, "podman said 500"},
      {"e", Category::kFlaky, false, 2, 20, ""},
      {"f", Category::kPassed, true, 1, 10, ""},
      {"h", Category::kIsolationViolation, false, 1, 9, "the isolation probe found: eth0"},
  };
  EvalSummary s = summarize({"a", "b", "c", "d", "e", "f", "g", "h"}, rows);
  s.jobs = 2;
  s.wall_ms = 1234;
  nlohmann::json j = summary_to_json(s);
  CHECK(j["total"] == 8);
  CHECK(j["finished"] == 7);
  CHECK(j["passed"] == nlohmann::json{{"count", 2}, {"ids", {"a", "f"}}});
  CHECK(j["failed"] == nlohmann::json{{"count", 1}, {"ids", {"b"}}});
  CHECK(j["refused"]["ids"] == nlohmann::json{"c"});
  CHECK(j["infra_error"]["ids"] == nlohmann::json{"d"});
  CHECK(j["flaky"]["ids"] == nlohmann::json{"e"});
  CHECK(j["skipped"] == nlohmann::json{{"count", 2}, {"ids", {"b", "f"}}});
  CHECK(j["not_run"]["ids"] == nlohmann::json{"g"});
  CHECK(j["isolation_violation"] == nlohmann::json{{"count", 1}, {"ids", {"h"}}});
  CHECK(eval_exit_code(s) == 5);
  CHECK(summary_table(s, 1) ==
        "category             count  tasks\n"
        "passed                   2  a, +1 more\n"
        "failed                   1  b\n"
        "refused                  1  c\n"
        "infra_error              1  d\n"
        "flaky                    1  e\n"
        "isolation_violation      1  h\n"
        "(skipped)                2  b, +1 more\n"
        "(not run)                1  g\n"
        "total 8 task(s), 2 job(s), 1234 ms\n");

  EvalSummary clean = summarize({"a", "b"}, {rows[0], rows[1]});
  CHECK(eval_exit_code(clean) == 0);  // a failing test is a verdict, not an eval failure
  // An isolation violation fails the eval as `test` fails for one (exit 5).
  CHECK(eval_exit_code(summarize({"a", "h"}, {rows[0], rows[6]})) == 5);
}

TEST_CASE("eval progress: the bar and the plain lines") {
  CategoryCounts counts{};
  counts[static_cast<int>(Category::kPassed)] = 3;
  counts[static_cast<int>(Category::kFailed)] = 1;
  counts[static_cast<int>(Category::kRefused)] = 1;
  counts[static_cast<int>(Category::kIsolationViolation)] = 1;
  CHECK(progress_bar(6, 10, counts, 10) ==
        "[######----]  6/10  passed 3 failed 1 refused 1 infra_error 0 flaky 0 isolation_violation 1");
  EvalEvent e{EvalEvent::Kind::kFinished, {"t\x1b[2J", Category::kFailed, false, 2, 412, "tests failed: 1"}};
  CHECK(progress_event_line(e, 3, 50) == "eval: [3/50] t\\x1b[2J: failed (2 attempts, 412 ms): tests failed: 1");
  e.kind = EvalEvent::Kind::kSkipped;
  CHECK(progress_event_line(e, 4, 50) == "eval: [4/50] t\x1b[2J: skipped (failed in an earlier run)");
}

TEST_CASE("eval resume: only a result with a verdict under the same key is finished, a changed key says what changed") {
  Tmp t;
  std::filesystem::create_directories(t.path + "/results");
  EvalTask task;
  task.id = "a";
  task.patch_json = "{}";
  const ResumeKey key{"seed-1", "patch-1", "config-1", "sha256:image-1"};
  auto write = [&](const std::string& category, const nlohmann::json& stored_key) {
    nlohmann::json e = {{"category", category}, {"ms", 7}, {"attempts", {1, 2}}};
    if (!stored_key.is_null()) e["key"] = stored_key;
    std::ofstream(eval_result_path(t.path, "a")) << nlohmann::json{{"reason", "tests failed"}, {"eval", e}}.dump();
  };
  auto check = [&] { return check_resume(t.path, task, key); };
  CHECK_FALSE(check().finished.has_value());  // no file
  CHECK(check().changed.empty());
  write("failed", resume_key_to_json(key));
  auto row = check().finished;
  REQUIRE(row.has_value());
  CHECK(row->category == Category::kFailed);
  CHECK(row->skipped);
  CHECK(row->attempts == 2);
  CHECK(row->ms == 7);
  write("infra_error", resume_key_to_json(key));
  CHECK_FALSE(check().finished.has_value());  // infrastructure errors are retried
  CHECK(check().changed.empty());            // ... which is not a change
  write("isolation_violation", resume_key_to_json(key));
  row = check().finished;  // a finding about the engine: never run again as if it had flaked
  REQUIRE(row.has_value());
  CHECK(row->category == Category::kIsolationViolation);
  for (auto [part, edit] : std::vector<std::pair<std::string, ResumeKey>>{
           {"seed", {"seed-2", "patch-1", "config-1", "sha256:image-1"}},
           {"patch", {"seed-1", "patch-2", "config-1", "sha256:image-1"}},
           {"config", {"seed-1", "patch-1", "config-2", "sha256:image-1"}},
           {"image", {"seed-1", "patch-1", "config-1", "sha256:image-2"}}}) {
    write("passed", resume_key_to_json(edit));
    INFO(part);
    CHECK_FALSE(check().finished.has_value());
    CHECK(check().changed == std::vector<std::string>{part});
  }
  write("passed", resume_key_to_json({"seed-2", "patch-1", "config-2", "sha256:image-1"}));
  CHECK(check().changed == std::vector<std::string>{"seed", "config"});
  write("passed", nullptr);  // written before resume keys
  CHECK(check().changed == std::vector<std::string>{"key"});
  std::ofstream(eval_result_path(t.path, "a")) << "{\"eval\":";  // torn by hand
  CHECK_FALSE(check().finished.has_value());
}

TEST_CASE("eval summary: tasks run again are listed per changed part") {
  std::vector<EvalRow> rows(3);
  rows[0].id = "a";
  rows[0].category = Category::kPassed;
  rows[0].changed = {"seed"};
  rows[1].id = "b";
  rows[1].category = Category::kFailed;
  rows[1].changed = {"seed", "config"};
  rows[2].id = "c";
  rows[2].category = Category::kPassed;
  rows[2].skipped = true;
  const EvalSummary s = summarize({"a", "b", "c"}, rows);
  const nlohmann::json j = summary_to_json(s);
  CHECK(j["changed"]["seed"]["ids"] == nlohmann::json({"a", "b"}));
  CHECK(j["changed"]["config"]["count"] == 1);
  CHECK_FALSE(j["changed"].contains("image"));
  const std::string table = summary_table(s);
  CHECK(table.find("(changed: seed)          2  a, b\n") != std::string::npos);
  CHECK(table.find("(changed: config)        1  b\n") != std::string::npos);
}

TEST_CASE("eval summary: suspicious tasks and those of them that passed, in JSON and the table") {
  std::vector<EvalRow> rows(3);
  rows[0].id = "honest";
  rows[0].category = Category::kPassed;
  rows[1].id = "forged";
  rows[1].category = Category::kPassed;
  rows[1].suspicious = true;
  rows[2].id = "exits";
  rows[2].category = Category::kFailed;
  rows[2].suspicious = true;
  const EvalSummary s = summarize({"honest", "forged", "exits"}, rows);
  const nlohmann::json j = summary_to_json(s);
  CHECK(j["suspicious"] == nlohmann::json{{"count", 2}, {"ids", {"forged", "exits"}}});
  CHECK(j["suspicious_passed"] == nlohmann::json{{"count", 1}, {"ids", {"forged"}}});
  CHECK(summary_table(s).find("(suspicious)             2  forged (passed), exits\n") != std::string::npos);
  // No suspicious task: empty groups in JSON, no row in the table.
  const EvalSummary none = summarize({"honest"}, {rows[0]});
  CHECK(summary_to_json(none)["suspicious"]["count"] == 0);
  CHECK(summary_table(none).find("suspicious") == std::string::npos);
}
