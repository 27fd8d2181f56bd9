// The pipeline's logic on the recording fake engine (fake_engine.h): the
// order of the steps, cleanup on every failure path and on a signal, the one
// infrastructure retry, the verdict categories, the record fields, the
// repair loop. The same pipeline drives podman and Kubernetes; their engines
// are tested for real in tests/integration and tests/k8s.
#include "catch_compat.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "pipeline/agent_run.h"
#include "contract/junit_report.h"
#include "contract/runner_driver.h"
#include "fake_engine.h"
#include "util/interrupt.h"
#include "store/run_store.h"
#include "pipeline/sandbox_run.h"
#include "pipeline/triage_run.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;
using Calls = std::vector<std::string>;

namespace {

const std::string kFix = R"({"files":[{"path":"calculator.py","content":"def add(a, b):\n    return a + b\n"}]})";
const std::string kWrong = R"({"files":[{"path":"calculator.py","content":"def add(a, b):\n    return a * b\n"}]})";

struct World {
  Tmp tmp;
  RunStore store{tmp.path + "/state"};
  Config config;
  World() {
    const std::string seed = tmp.path + "/seed";
    std::filesystem::create_directory(seed);
    std::ofstream(seed + "/calculator.py") << "def add(a, b):\n    return a - b\n";
    std::ofstream(seed + "/test_calculator.py") << "import unittest\n";
    config.seed = seed;
    // The fake runs print unittest's text; the runner's own report (the
    // default, runner_driver.h) has its own test below.
    config.report = "output";
  }
  ProofRequest request(const std::string& patch = kFix) const {
    ProofRequest r;
    r.config = config;
    r.patch_json = patch;
    return r;
  }
  json record(const std::string& run_id) const {
    auto r = store.read(run_id);
    REQUIRE(r.ok());
    return *r;
  }
};

struct SignalReset {
  ~SignalReset() { set_interrupted_for_test(0); }
};

std::vector<std::string> step_names(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& t : r.timings) out.push_back(t.step);
  return out;
}

JudgeOptions judged(int rerun = 0) {
  JudgeOptions o;
  o.rerun = rerun;
  return o;
}

}  // namespace

TEST_CASE("pipeline: a passing run calls the engine in order and times every step", "[pipeline]") {
  World w;
  fake::Engine e;
  auto r = prove(w.request(), e, w.store, nullptr);
  REQUIRE(r.ok());
  CHECK(e.calls == Calls{"check", "image", "prepare", "create", "verify", "start", "wait", "logs", "remove"});
  CHECK(step_names(*r) == Calls{"validate", "snapshot", "engine", "image", "copy", "create", "verify", "run",
                                "logs", "remove"});
  CHECK(r->status == RunStatus::kPassed);
  CHECK(r->tests_passed);
  CHECK(r->sandbox_id == "fake-" + r->run_id);
  CHECK(r->image_digest == "sha256:fake");
  CHECK(r->tests.cases.size() == 2);
  CHECK(e.alive == 0);

  // A caller that checked the engine already (eval, run) skips that part.
  fake::Engine checked;
  ProofRequest req = w.request();
  req.engine_checked = true;
  REQUIRE(prove(req, checked, w.store, nullptr).ok());
  CHECK(checked.calls.front() == "image");
}

TEST_CASE("pipeline: a refused patch never reaches the engine", "[pipeline]") {
  World w;
  fake::Engine e;
  auto r = prove(w.request(R"({"files":[{"path":"test_calculator.py","content":"x"}]})"), e, w.store, nullptr);
  REQUIRE(r.ok());
  CHECK(r->status == RunStatus::kRefused);
  CHECK(r->category == Category::kRefused);
  CHECK(r->findings.at(0).code == "not_allowed");
  CHECK(e.calls.empty());
  CHECK(w.record(r->run_id)["status"] == "refused");
}

TEST_CASE("pipeline: every failing step removes the sandbox and records infra_error", "[pipeline]") {
  for (const std::string step : {"create", "verify", "start", "wait", "logs", "remove"}) {
    World w;
    fake::Engine e;
    e.runs = {fake::broken_at(step)};
    auto r = prove(w.request(), e, w.store, nullptr);
    INFO(step);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kEngine);
    CHECK(r.error().message.find("the fake engine failed at " + step) != std::string::npos);
    // The step failed, then the pipeline removed what it made.
    auto at = std::find(e.calls.begin(), e.calls.end(), step);
    REQUIRE(at != e.calls.end());
    CHECK(std::find(at + (step == "remove" ? 1 : 0), e.calls.end(), "remove") != e.calls.end());
    CHECK(e.alive == 0);
    const json rec = w.record(e.run_ids.at(0));
    CHECK(rec["status"] == "error");
    CHECK(rec["category"] == "infra_error");
    CHECK(rec["error"].get<std::string>().find("failed at " + step) != std::string::npos);
  }
  // Nothing was made when the private copy could not be: nothing to remove.
  World w;
  fake::Engine e;
  e.runs = {fake::broken_at("prepare")};
  REQUIRE_FALSE(prove(w.request(), e, w.store, nullptr).ok());
  CHECK(e.calls == Calls{"check", "image", "prepare"});
  CHECK(e.alive == 0);
}

TEST_CASE("pipeline: a signal at any step removes the sandbox, is recorded, and is never retried", "[pipeline]") {
  for (const std::string step : {"create", "verify", "start", "wait", "logs"}) {
    SignalReset reset;
    World w;
    fake::Engine e;
    fake::Run run;
    run.signal_at = step;  // the step itself succeeds; the signal is seen after it
    e.runs = {run, fake::passing()};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    INFO(step);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kInterrupted);
    CHECK(e.calls.back() == "remove");
    CHECK(e.alive == 0);
    CHECK(e.run_ids.size() == 1);  // no retry, no baseline
    CHECK(w.record(e.run_ids[0])["status"] == "interrupted");
  }
  // The signal arriving while the engine waits ends the wait itself.
  SignalReset reset;
  World w;
  fake::Engine e;
  e.runs = {fake::broken_at("wait", ErrorKind::kInterrupted)};
  auto r = prove(w.request(), e, w.store, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kInterrupted);
  CHECK(e.calls.back() == "remove");
  CHECK(e.alive == 0);
}

TEST_CASE("pipeline: an infrastructure failure is retried once in a fresh sandbox", "[pipeline]") {
  World w;
  fake::Engine e;
  e.runs = {fake::broken_at("verify"), fake::passing(), fake::failing() /* the baseline */};
  auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
  REQUIRE(r.ok());
  CHECK(r->category == Category::kPassed);
  REQUIRE(e.run_ids.size() == 3);
  CHECK(e.run_ids[0] != e.run_ids[1]);
  CHECK(r->run_id == e.run_ids[1]);
  CHECK(w.record(e.run_ids[0])["category"] == "infra_error");  // the failed try keeps its record

  fake::Engine twice;
  twice.runs = {fake::broken_at("create"), fake::broken_at("start")};
  auto again = prove_judged(w.request(), judged(), twice, w.store, nullptr);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message.rfind("infra_error (not a test failure, retried 1x): run ", 0) == 0);
  CHECK(category_of(again.error()) == Category::kInfraError);
  CHECK(twice.run_ids.size() == 2);
  CHECK(twice.alive == 0);
}

TEST_CASE("pipeline: two judged runs of one seed at once share one baseline run", "[pipeline]") {
  // eval --jobs 2 over predictions of one instance: the second waits for the
  // first's baseline and reads it from the cache instead of running its own.
  World w;
  fake::Engine first, second;
  fake::Run slow_baseline = fake::failing();
  slow_baseline.wait_ms = 400;  // the first holds the baseline while the second arrives
  first.runs = {fake::passing(), slow_baseline};
  fake::Run patched = fake::passing();
  patched.wait_ms = 100;
  second.runs = {patched, fake::failing()};
  Result<RunResult> a = Error{ErrorKind::kEngine, "not run"}, b = Error{ErrorKind::kEngine, "not run"};
  std::thread ta([&] { a = prove_judged(w.request(), judged(), first, w.store, nullptr); });
  std::thread tb([&] { b = prove_judged(w.request(), judged(), second, w.store, nullptr); });
  ta.join();
  tb.join();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(first.run_ids.size() + second.run_ids.size() == 3);  // two patched runs, one baseline
  CHECK(a->category == Category::kPassed);
  CHECK(b->category == Category::kPassed);
  CHECK(a->triage["fixed"] == b->triage["fixed"]);
  CHECK(a->triage["fixed"] == json::array({"test_calculator.CalculatorTest.test_add"}));
  CHECK(a->triage["baseline"]["cached"] != b->triage["baseline"]["cached"]);  // one ran it, one read it
}

TEST_CASE("pipeline: an isolation violation is its own kind, recorded with the probe, never retried", "[pipeline]") {
  World w;
  fake::Engine e;
  fake::Run run;
  run.violations = {"an interface other than lo: eth0"};
  e.runs = {run, fake::passing()};
  auto r = prove_judged(w.request(), judged(1), e, w.store, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kIsolation);
  CHECK(category_of(r.error()) == Category::kIsolationViolation);
  CHECK(r.error().message.find("the isolation probe inside the sandbox found: an interface other than lo: eth0; "
                               "the verdict is void") != std::string::npos);
  CHECK(e.run_ids.size() == 1);
  CHECK(e.calls.back() == "remove");
  const json rec = w.record(e.run_ids[0]);
  CHECK(rec["category"] == "isolation_violation");
  CHECK(rec["isolation_probe"]["violations"] == json::array({"an interface other than lo: eth0"}));
}

TEST_CASE("pipeline: verdict categories passed, failed, flaky, and a pass that breaks a test", "[pipeline]") {
  World w;
  {
    fake::Engine e;
    e.runs = {fake::passing(), fake::failing()};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->category == Category::kPassed);
    CHECK(r->triage["fixed"] == json::array({"test_calculator.CalculatorTest.test_add"}));
    CHECK(r->triage["baseline"]["cached"] == false);
  }
  {
    fake::Engine e;  // the baseline is cached now: one sandbox run
    e.runs = {fake::failing()};
    auto r = prove_judged(w.request(kWrong), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->category == Category::kFailed);
    CHECK(r->status == RunStatus::kFailed);
    CHECK(r->triage["still_failing"] == json::array({"test_calculator.CalculatorTest.test_add"}));
    CHECK(e.run_ids.size() == 1);
  }
  {
    fake::Engine e;
    e.runs = {fake::failing(), fake::passing()};
    auto r = prove_judged(w.request(), judged(2), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->category == Category::kFlaky);
    CHECK(r->tests_passed);
    CHECK(r->triage["flaky"] == json::array({"test_calculator.CalculatorTest.test_add"}));
    CHECK(r->triage["runs"].size() == 2);
  }
  {
    fake::Engine e;
    fake::Run cut;
    cut.timed_out = true;
    cut.exit_code = 137;
    cut.output = "";
    e.runs = {cut};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->category == Category::kFailed);
    CHECK(r->reason.rfind("timeout", 0) == 0);
  }
  {
    // Exit 0 and a runner's OK, but a test that passed before is gone.
    World fresh;
    fake::Engine e;
    fake::Run fewer;
    fewer.output = "test_add (test_calculator.CalculatorTest.test_add) ... ok\n\nRan 1 test in 0.001s\n\nOK\n";
    fake::Run before;
    before.exit_code = 1;
    before.output = fake::kFailingOutput;
    e.runs = {fewer, before};
    auto r = prove_judged(fresh.request(), judged(), e, fresh.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->category == Category::kFailed);
    CHECK(r->reason == "newly broken: test_calculator.CalculatorTest.test_sub passed before the patch and not after");
  }
}

TEST_CASE("pipeline: a pass whose runner counted fewer tests than the baseline is not a pass", "[pipeline]") {
  // Plain `go test` and ctest's summary name no tests, so per-test triage
  // cannot see a test go missing; the counts can (issue 15).
  World w;
  fake::Run before;
  before.exit_code = 8;
  before.output = "67% tests passed, 1 tests failed out of 3\n";
  {
    fake::Engine e;
    fake::Run fewer;
    fewer.output = "100% tests passed, 0 tests failed out of 2\n";
    e.runs = {fewer, before};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK_FALSE(r->tests_passed);
    CHECK(r->category == Category::kFailed);
    CHECK(r->reason == "fewer tests: ctest ran 2 tests, the baseline ran 3");
    CHECK(r->triage["baseline"]["runner"] ==
          json{{"runner", "ctest"}, {"unit", "tests"}, {"tests_run", 3}, {"passed", 2}, {"failed", 1}, {"skipped", 0}});
    CHECK(w.record(r->run_id)["runner"]["tests_run"] == 2);
  }
  {
    fake::Engine e;  // the cached baseline keeps the count
    fake::Run all;
    all.output = "100% tests passed, 0 tests failed out of 3\n";
    e.runs = {all};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->tests_passed);
    CHECK(r->triage["baseline"]["cached"] == true);
  }
  {
    fake::Engine e;  // another runner's count is not compared
    fake::Run other;
    other.output = "ok  \texample.com/m\t0.004s\n";
    e.runs = {other};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->tests_passed);
  }
}

TEST_CASE("pipeline: the run record's fields, for the run and its baseline", "[pipeline]") {
  World w;
  fake::Engine e;
  e.runs = {fake::passing(), fake::failing()};
  auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
  REQUIRE(r.ok());
  const json rec = w.record(r->run_id);
  CHECK(rec["run_id"] == r->run_id);
  CHECK(rec["kind"] == "test");
  CHECK(rec["backend"] == "fake");
  CHECK(rec["status"] == "passed");
  CHECK(rec["category"] == "passed");
  CHECK(rec["tests_passed"] == true);
  CHECK(rec["sandbox_id"] == "fake-" + r->run_id);
  CHECK(rec["seed"] == w.config.seed);
  CHECK(rec["test_command"] == w.config.test_command);
  CHECK(rec["owner"]["pid"] == static_cast<long>(getpid()));
  CHECK(rec["policy"]["runtime"] == "fake");
  CHECK(rec["triage"]["verdict"] == "passed");
  CHECK(rec["tests"]["format"] == "unittest");
  CHECK(rec["provenance"]["result_sha256"].get<std::string>().size() == 64);
  CHECK(rec["provenance"]["patch_sha256"] == r->patch_sha256);
  CHECK_FALSE(rec.contains("error"));
  const json base = w.record(rec["triage"]["baseline"]["run_id"]);
  CHECK(base["kind"] == "baseline");
  CHECK(base["status"] == "failed");
  CHECK(base["patch_sha256"] == "");
}

TEST_CASE("pipeline: the repair loop feeds a failure back to the next planner, on any engine", "[pipeline]") {
  World w;
  fake::Engine e;
  e.plans = {fake::Plan{0, kWrong}, fake::Plan{0, kFix}};
  e.runs = {fake::failing(), fake::failing() /* baseline */, fake::passing()};
  RunRequest req;
  req.config = w.config;
  req.attempts = 3;
  auto r = run_agent(req, e, w.store, nullptr);
  REQUIRE(r.ok());
  CHECK(r->tests_passed);
  CHECK(r->repair["stop_reason"] == "passed");
  REQUIRE(r->repair["attempts"].size() == 2);
  CHECK(r->repair["attempts"][0]["verdict"] == "failed");
  CHECK(r->repair["total_usage"]["total_tokens"] == 30);
  REQUIRE(e.tasks.size() == 2);
  CHECK(e.tasks[0].feedback.attempt == 0);
  CHECK(e.tasks[1].feedback.attempt == 1);
  CHECK(e.tasks[1].feedback.reason.find("still_failing: test_calculator.CalculatorTest.test_add") != std::string::npos);
  CHECK(e.calls.front() == "check");  // once, then every sandbox run skips it
  CHECK(std::count(e.calls.begin(), e.calls.end(), "check") == 1);
  CHECK(e.alive == 0);

  // A reply the planner refused: no sandbox, category refused.
  fake::Engine refusing;
  refusing.plans = {fake::Plan{4, ""}};
  auto refused = run_agent(RunRequest{w.config}, refusing, w.store, nullptr);
  REQUIRE(refused.ok());
  CHECK(refused->category == Category::kRefused);
  CHECK(refusing.run_ids.empty());
}

TEST_CASE("pipeline: by default the sandbox runs the runner so that it writes its own report, which decides",
          "[pipeline][driver]") {
  World w;
  w.config.report = "auto";
  const std::string xml =
      "<testsuite><testcase classname=\"test_calculator.CalculatorTest\" name=\"test_add\"/></testsuite>";
  const std::string block = "\nlazyagent-oci junit-report: " + std::to_string(xml.size()) + "\n" + xml +
                            "\nlazyagent-oci junit-report end\n";
  fake::Engine e;
  fake::Run with_report;
  with_report.output = fake::kPassingOutput + block;
  fake::Run missing;  // the process ended before its runner finished: the wrapper says so
  missing.output = "Ran 4 tests in 0.001s\n\nOK\n\nlazyagent-oci junit-report: missing\n\nlazyagent-oci junit-report end\n";
  fake::Run text_only;  // no block at all: the wrapper never ran to its end
  e.runs = {with_report, missing, text_only};

  auto r = prove(w.request(), e, w.store, nullptr);
  REQUIRE(r.ok());
  REQUIRE(e.commands.size() == 1);
  CHECK(e.commands[0].find("python3 -c '") != std::string::npos);
  CHECK(e.commands[0].find("/tmp/.lazyagent-report-") != std::string::npos);
  CHECK(r->evidence == "driver");
  CHECK(r->tests_passed);
  CHECK(r->tests.format == "junit");
  CHECK(r->runner.tests_run == 1);
  CHECK(r->test_output == fake::kPassingOutput);  // the block is evidence, not output
  // The record keeps the user's command.
  CHECK(w.record(r->run_id)["test_command"] == "python3 -m unittest -v");
  // A fresh path per run.
  auto m = prove(w.request(), e, w.store, nullptr);
  REQUIRE(m.ok());
  CHECK(e.commands[1] != e.commands[0]);
  CHECK_FALSE(m->tests_passed);
  CHECK(m->reason == std::string("no test report: ") + kDriverReportMissing);
  auto t = prove(w.request(), e, w.store, nullptr);
  REQUIRE(t.ok());
  CHECK_FALSE(t->tests_passed);
  CHECK(t->reason ==
        "no test report: the unittest report the tool asked for: no report block in the output (the test command "
        "was cut or killed before it was printed)");
}

TEST_CASE("pipeline: the baseline is cached per evidence mode", "[pipeline][driver]") {
  World w;  // report: output
  {
    fake::Engine e;
    e.runs = {fake::passing(), fake::failing() /* the baseline */};
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->triage["baseline"]["cached"] == false);
  }
  {
    fake::Engine e;  // the same mode: cached, one sandbox run
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->triage["baseline"]["cached"] == true);
    CHECK(e.run_ids.size() == 1);
  }
  {
    fake::Engine e;  // the runner's own report: a baseline of its own
    w.config.report = "auto";
    auto r = prove_judged(w.request(), judged(), e, w.store, nullptr);
    REQUIRE(r.ok());
    CHECK(r->triage["baseline"]["cached"] == false);
    CHECK(e.run_ids.size() == 2);
  }
}

TEST_CASE("warm spares are an engine's optional part: on an engine without a pool keep_warm asks it nothing") {
  World w;
  w.config.engine.warm = 2;
  fake::Engine e;  // no warm_pool(): like the Kubernetes engine
  REQUIRE(e.warm_pool() == nullptr);
  auto made = keep_warm(w.config, 30, e, 2);
  REQUIRE(made.ok());
  CHECK(made->empty());
  CHECK(e.calls.empty());  // no policy check, no image digest, nothing kept
  // A run on it is the same as without engine.warm: no spare claimed, nothing deferred.
  auto r = prove(w.request(), e, w.store, nullptr);
  REQUIRE(r.ok());
  CHECK(r->warm.is_null());
  CHECK(r->removal != "deferred");
}
