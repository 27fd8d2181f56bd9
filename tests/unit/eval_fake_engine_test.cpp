// eval's flow on the recording fake engine (fake_engine.h): the categories a
// task lands in, what the summary counts, and what a resumed eval runs again.
// The real thing is tested against podman in tests/integration/eval_test.cpp.
#include "catch_compat.h"

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

// The fake engine, telling the test which runs it prepared (an eval owns and
// destroys its engines before it returns).
struct CountingEngine : fake::Engine {
  std::vector<std::string>* prepared = nullptr;
  Result<std::unique_ptr<Sandbox>> prepare_sandbox(const SandboxSpec& spec) override {
    prepared->push_back(spec.run_id);
    return fake::Engine::prepare_sandbox(spec);
  }
};

struct EvalWorld {
  Tmp tmp;
  RunStore store{tmp.path + "/state"};
  EvalOptions opt;
  std::vector<EvalTask> tasks;

  EvalWorld() {
    const std::string seed = tmp.path + "/seed";
    std::filesystem::create_directory(seed);
    std::ofstream(seed + "/calculator.py") << "def add(a, b):\n    return a - b\n";
    std::ofstream(seed + "/test_calculator.py") << "import unittest\n";
    opt.config.seed = seed;
    opt.config.report = "output";  // the fake runs print unittest's text
    opt.jobs = 1;
    opt.prepare = 0;  // one worker thread: one fake engine, its script in order
    opt.baseline = false;
    opt.out_dir = tmp.path + "/out";
    std::filesystem::create_directories(opt.out_dir + "/results");
    for (const char* id : {"passes", "breaks-out", "flakes-infra"}) {
      EvalTask t;
      t.id = id;
      t.line = tasks.size() + 1;
      t.patch_json = kFix;
      tasks.push_back(t);
    }
  }

  // Runs the eval with one fake engine scripted by `runs`; returns the rows by id.
  std::map<std::string, EvalRow> run(std::deque<fake::Run> runs, std::vector<std::string>* prepared) {
    prepared->clear();
    opt.open_engine = [runs, prepared]() -> Result<std::unique_ptr<Engine>> {
      auto e = std::make_unique<CountingEngine>();
      e->runs = runs;
      e->prepared = prepared;
      return std::unique_ptr<Engine>(std::move(e));
    };
    auto report = run_eval(tasks, opt, store, nullptr);
    REQUIRE(report.ok());
    std::map<std::string, EvalRow> by_id;
    for (const auto& r : report->rows) by_id[r.id] = r;
    return by_id;
  }
};

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

}  // namespace

TEST_CASE("eval on the fake engine: an isolation violation is its own category, counted, and never run again on resume",
          "[eval]") {
  EvalWorld w;
  fake::Run breaks_out;
  breaks_out.violations = {"an interface other than lo: eth0"};
  // passes; breaks-out (no retry); flakes-infra: create fails twice (one retry).
  std::vector<std::string> prepared;
  auto rows = w.run({fake::passing(), breaks_out, fake::broken_at("create"), fake::broken_at("create")}, &prepared);
  REQUIRE(rows.size() == 3);
  CHECK(rows["passes"].category == Category::kPassed);
  CHECK(rows["breaks-out"].category == Category::kIsolationViolation);
  CHECK(rows["flakes-infra"].category == Category::kInfraError);
  CHECK(prepared.size() == 4);  // the violation was not retried, the infra error once

  const json stored = read_json(eval_result_path(w.opt.out_dir, "breaks-out"));
  CHECK(stored["eval"]["category"] == "isolation_violation");
  CHECK(stored["eval"]["attempts"].size() == 1);
  CHECK(stored["eval"]["attempts"][0]["outcome"] == "isolation_violation");
  CHECK(stored["error_kind"] == "isolation");

  std::vector<EvalRow> list;
  std::vector<std::string> ids;
  for (const auto& t : w.tasks) {
    ids.push_back(t.id);
    list.push_back(rows[t.id]);
  }
  const EvalSummary s = summarize(ids, list);
  const json j = summary_to_json(s);
  CHECK(j["isolation_violation"]["ids"] == json::array({"breaks-out"}));
  CHECK(j["infra_error"]["ids"] == json::array({"flakes-infra"}));
  CHECK(eval_exit_code(s) == 5);

  // Resumed: only the infra error runs again; the violation is a finding.
  auto again = w.run({fake::passing()}, &prepared);
  CHECK(again["passes"].skipped);
  CHECK(again["breaks-out"].skipped);
  CHECK(again["breaks-out"].category == Category::kIsolationViolation);
  CHECK_FALSE(again["flakes-infra"].skipped);
  CHECK(again["flakes-infra"].category == Category::kPassed);
  CHECK(prepared.size() == 1);
}
