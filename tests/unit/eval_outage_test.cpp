// eval rides out an outage of its engine (eval_outage.h), on the recording
// fake engine (fake_engine.h): a task the outage cut short runs again from the
// start once the engine answers, no task is an infra_error, and past
// eval.engine_wait_seconds the tasks not run are not_run for a resume. The
// real thing (podman's service stopped and started mid-eval) is in
// tests/security/chaos_test.cpp.
#include "catch_compat.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "eval/eval_runner.h"
#include "fake_engine.h"
#include "store/run_store.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

const std::string kFix = R"({"files":[{"path":"calculator.py","content":"def add(a, b):\n    return a + b\n"}]})";

struct OutageWorld {
  Tmp tmp;
  RunStore store{tmp.path + "/state"};
  EvalOptions opt;
  std::vector<EvalTask> tasks;
  std::vector<EvalEvent> outage_events;
  std::vector<std::string> prepared;  // run ids, over every engine of the last eval

  OutageWorld() {
    const std::string seed = tmp.path + "/seed";
    std::filesystem::create_directory(seed);
    std::ofstream(seed + "/calculator.py") << "def add(a, b):\n    return a - b\n";
    opt.config.seed = seed;
    opt.config.report = "output";
    opt.jobs = 1;
    opt.prepare = 0;  // one worker: one fake engine, its script in order
    opt.baseline = false;
    opt.out_dir = tmp.path + "/out";
    for (const char* id : {"t1", "t2", "t3", "t4"}) {
      EvalTask t;
      t.id = id;
      t.line = tasks.size() + 1;
      t.patch_json = kFix;
      tasks.push_back(t);
    }
  }

  // One fake engine scripted by `runs`, away for `unreachable_checks`
  // checks once the outage begins (-1: for good), and for `at_start` checks
  // before the first sandbox.
  Result<EvalReport> run(std::deque<fake::Run> runs, int unreachable_checks, int at_start = 0) {
    prepared.clear();
    outage_events.clear();
    opt.open_engine = [this, runs, unreachable_checks, at_start]() -> Result<std::unique_ptr<Engine>> {
      struct Recording : fake::Engine {
        std::vector<std::string>* prepared = nullptr;
        Result<std::unique_ptr<Sandbox>> prepare_sandbox(const SandboxSpec& spec) override {
          prepared->push_back(spec.run_id);
          return fake::Engine::prepare_sandbox(spec);
        }
      };
      auto e = std::make_unique<Recording>();
      e->runs = runs;
      e->unreachable_checks = unreachable_checks;
      e->unreachable_at_start = at_start;
      e->prepared = &prepared;
      return std::unique_ptr<Engine>(std::move(e));
    };
    return run_eval(tasks, opt, store, [this](const EvalEvent& e) {
      if (e.kind == EvalEvent::Kind::kOutage) outage_events.push_back(e);
    });
  }

  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& t : tasks) out.push_back(t.id);
    return out;
  }
};

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

}  // namespace

TEST_CASE("eval outage: a task the engine's outage cut short runs again from the start once it answers, no "
          "infra_error", "[eval][outage]") {
  OutageWorld w;
  // t2's sandbox loses its service while its tests run; the engine then
  // refuses three checks (at once, after 250 ms, after 500 more) and answers.
  const auto t0 = std::chrono::steady_clock::now();
  auto report = w.run({fake::passing(), fake::broken_at("wait", ErrorKind::kUnreachable), fake::passing(),
                       fake::passing(), fake::passing()},
                      3);
  const auto waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(report.ok());
  const EvalSummary s = summarize(w.ids(), report->rows);
  CHECK(s.ids(Category::kPassed) == w.ids());
  CHECK(s.ids(Category::kInfraError).empty());
  CHECK(s.not_run.empty());
  CHECK(eval_exit_code(s) == 0);
  CHECK(w.prepared.size() == 5);  // t2 twice: its cut-short run, then a whole one
  CHECK(waited_ms >= EngineOutage::kFirstCheckMs * 3);

  // The result says so, without counting it as an attempt or a retry.
  const json t2 = read_json(eval_result_path(w.opt.out_dir, "t2"));
  CHECK(t2["eval"]["category"] == "passed");
  CHECK(t2["eval"]["attempts"].size() == 1);
  REQUIRE(t2["eval"]["outages"].size() == 1);
  CHECK(t2["eval"]["outages"][0]["outcome"] == "engine_unreachable");
  CHECK(t2["eval"]["outages"][0]["detail"].get<std::string>().find("the fake engine failed at wait") != std::string::npos);
  CHECK(read_json(eval_result_path(w.opt.out_dir, "t1"))["eval"]["outages"].empty());

  // Told once as it began, once as it ended; logged for the summary.
  REQUIRE(w.outage_events.size() == 2);
  const OutageEvent& began = w.outage_events[0].outage;
  CHECK(began.kind == OutageEvent::Kind::kUnreachable);
  CHECK(outage_line(began).rfind("engine unreachable since " + clock_time(began.outage.began) +
                                     ", waiting (up to 600 s, eval.engine_wait_seconds): ",
                                 0) == 0);
  // The task's verdict wording is not repeated in the outage line.
  OutageEvent worded = began;
  worded.error = "infra_error (not a test failure, retried 1x): podman unreachable";
  CHECK(outage_line(worded).find("eval.engine_wait_seconds): podman unreachable") != std::string::npos);
  CHECK(outage_line(worded).find("not a test failure") == std::string::npos);
  CHECK(w.outage_events[1].outage.kind == OutageEvent::Kind::kBack);
  REQUIRE(report->outages.size() == 1);
  CHECK_FALSE(report->outages[0].gave_up);
  CHECK(report->outages[0].ms >= EngineOutage::kFirstCheckMs * 3);
  CHECK_FALSE(report->gave_up);
}

TEST_CASE("eval outage: past eval.engine_wait_seconds the tasks not run are not_run, and a resume runs exactly them",
          "[eval][outage]") {
  OutageWorld w;
  w.opt.engine_wait_seconds = 1;
  auto report = w.run({fake::passing(), fake::broken_at("create", ErrorKind::kUnreachable)}, -1);
  REQUIRE(report.ok());
  CHECK(report->gave_up);
  EvalSummary s = summarize(w.ids(), report->rows);
  CHECK(s.ids(Category::kPassed) == std::vector<std::string>{"t1"});
  CHECK(s.ids(Category::kInfraError).empty());
  CHECK(s.not_run == std::vector<std::string>{"t2", "t3", "t4"});
  CHECK(eval_exit_code(s) == 5);
  CHECK(w.prepared.size() == 2);  // t3 and t4 never started
  for (const char* id : {"t2", "t3", "t4"}) CHECK_FALSE(std::filesystem::exists(eval_result_path(w.opt.out_dir, id)));
  REQUIRE(w.outage_events.size() == 2);
  CHECK(w.outage_events[1].outage.kind == OutageEvent::Kind::kGaveUp);
  CHECK(outage_line(w.outage_events[1].outage).find("gave up after 1.") != std::string::npos);
  CHECK(outage_line(w.outage_events[1].outage).find("the tasks not run are not_run") != std::string::npos);
  s.engine_outages = report->outages;
  const json j = summary_to_json(s);
  CHECK(j["not_run"]["ids"] == json::array({"t2", "t3", "t4"}));
  REQUIRE(j["engine_outages"].size() == 1);
  CHECK(j["engine_outages"][0]["gave_up"] == true);
  CHECK(j["engine_outages"][0]["ms"].get<long>() >= 1000);
  CHECK(summary_table(s).find("gave up (eval.engine_wait_seconds)") != std::string::npos);

  // The engine is back: the resume runs t2, t3, t4 and nothing else.
  auto again = w.run({}, 0);
  REQUIRE(again.ok());
  const EvalSummary s2 = summarize(w.ids(), again->rows);
  CHECK(s2.ids(Category::kPassed) == w.ids());
  CHECK(s2.skipped == std::vector<std::string>{"t1"});
  CHECK(w.prepared.size() == 3);
  CHECK(again->outages.empty());
}

TEST_CASE("eval outage: an engine away as the eval starts is waited for, then every task runs, past "
          "eval.engine_wait_seconds nothing runs", "[eval][outage][quick]") {
  OutageWorld w;
  auto report = w.run({}, 0, 3);  // the first check, the ride-out's own, and one after 250 ms find it away
  REQUIRE(report.ok());
  const EvalSummary s = summarize(w.ids(), report->rows);
  CHECK(s.ids(Category::kPassed) == w.ids());
  CHECK(s.not_run.empty());
  CHECK(w.prepared.size() == 4);
  REQUIRE(w.outage_events.size() == 2);
  CHECK(w.outage_events[0].outage.kind == OutageEvent::Kind::kUnreachable);
  CHECK(w.outage_events[1].outage.kind == OutageEvent::Kind::kBack);
  REQUIRE(report->outages.size() == 1);
  CHECK(report->outages[0].ms >= EngineOutage::kFirstCheckMs);

  OutageWorld gone;
  gone.opt.engine_wait_seconds = 1;
  auto stopped = gone.run({}, 0, -1);
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().kind == ErrorKind::kUnreachable);
  CHECK(stopped.error().message ==
        "eval: nothing was run (eval.engine_wait_seconds 1); rerun once the engine answers: the engine stayed "
        "unreachable: the fake engine is away");
  CHECK(gone.prepared.empty());
  REQUIRE(gone.outage_events.size() == 2);
  CHECK(gone.outage_events[1].outage.kind == OutageEvent::Kind::kGaveUp);
  // Its line says nothing ran: no task is not_run, there is no summary.
  CHECK(outage_line(gone.outage_events[1].outage).find("nothing was run: rerun once the engine answers") != std::string::npos);
  CHECK(outage_line(gone.outage_events[1].outage).find("not_run") == std::string::npos);
}

TEST_CASE("eval outage: without a ride-out an outage is an infra_error, and a task that keeps meeting one becomes "
          "one after kMaxOutageReruns", "[eval][outage]") {
  int calls = 0;
  const AttemptFn unreachable = [&calls]() -> Result<RunResult> {
    ++calls;
    return Error{ErrorKind::kUnreachable, "cannot reach podman"};
  };
  // The old behaviour (no ride-out): the outage is one more infrastructure failure.
  TaskVerdict old = run_attempts(unreachable, AttemptPolicy{});
  CHECK(old.category == Category::kInfraError);
  CHECK(calls == 2);  // the attempt and its one retry
  CHECK_FALSE(old.not_run);

  // An engine that answers each check yet fails each run: bounded.
  calls = 0;
  int rides = 0;
  TaskVerdict v = run_attempts(unreachable, AttemptPolicy{}, [&rides](const Error&) {
    ++rides;
    return ok_status();
  });
  CHECK(rides == kMaxOutageReruns);
  CHECK(v.outages.size() == static_cast<std::size_t>(kMaxOutageReruns));
  CHECK(v.category == Category::kInfraError);
  CHECK(calls == kMaxOutageReruns + 2);
  CHECK(v.attempts.size() == 2);

  // A signal while waiting: interrupted, no category.
  TaskVerdict stopped = run_attempts(unreachable, AttemptPolicy{}, [](const Error&) -> Status {
    return Error{ErrorKind::kInterrupted, "interrupted by signal 2"};
  });
  CHECK(stopped.interrupted);
  CHECK_FALSE(stopped.not_run);
}
