// A recording fake engine (engine.h), in ninja's style: it does nothing but
// write down every call in order and answer from a script, so that the
// pipeline's own logic (step order, cleanup on every path, retries, verdict
// categories, records) can be tested without podman or a cluster. The real
// engines are tested against the real podman service and a real cluster.
#pragma once

#include <chrono>
#include <thread>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "util/interrupt.h"

namespace fake {

using lazyagent::ContainerExit;
using lazyagent::ContainerLogs;
using lazyagent::Error;
using lazyagent::ErrorKind;
using lazyagent::Result;
using lazyagent::Status;

inline const std::string kPassingOutput =
    "test_add (test_calculator.CalculatorTest.test_add) ... ok\n"
    "test_sub (test_calculator.CalculatorTest.test_sub) ... ok\n"
    "\n----------------------------------------------------------------------\n"
    "Ran 2 tests in 0.001s\n\nOK\n";
inline const std::string kFailingOutput =
    "test_add (test_calculator.CalculatorTest.test_add) ... FAIL\n"
    "test_sub (test_calculator.CalculatorTest.test_sub) ... ok\n"
    "\n----------------------------------------------------------------------\n"
    "Ran 2 tests in 0.001s\n\nFAILED (failures=1)\n";

// One sandbox run as the script wants it.
struct Run {
  int exit_code = 0;
  std::string output = kPassingOutput;
  bool timed_out = false;
  std::string fail_at;                 // "prepare", "create", "verify", "start", "wait", "logs", "remove"
  ErrorKind fail_kind = ErrorKind::kEngine;
  std::string signal_at;               // a step at which SIGINT "arrives" (the step itself succeeds)
  std::vector<std::string> violations; // what the isolation probe "saw"
  int wait_ms = 0;                     // how long the "tests" take (the wait sleeps)
};
inline Run passing() { return Run{}; }
inline Run failing() { return Run{1, kFailingOutput}; }
inline Run broken_at(const std::string& step, ErrorKind kind = ErrorKind::kEngine) {
  Run r;
  r.fail_at = step;
  r.fail_kind = kind;
  return r;
}

// One planner run: what it prints and how it exits.
struct Plan {
  int exit_code = 0;
  std::string patch;  // stdout
  std::string log = "planner: asked the provider\nplanner-summary: {\"model\":\"fake\",\"usage\":"
                    "{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n";
};

class Engine : public lazyagent::Engine {
 public:
  std::vector<std::string> calls;        // "check", "image", "prepare r-...", "create", ..., "remove"
  std::deque<Run> runs;                  // one per sandbox run, in order; passing() when empty
  std::deque<Plan> plans;                // one per planner run
  std::vector<lazyagent::PlannerTask> tasks;  // what each planner was asked
  std::vector<std::string> run_ids;      // of every sandbox prepared
  int alive = 0;                         // sandboxes and planners not yet destroyed
  std::vector<std::string> commands;     // the test command each sandbox was prepared with
  bool fail_check = false;
  // An outage (Engine::after_outage): once a sandbox was prepared, this many
  // checks find the engine unreachable (-1: every one), then it answers.
  int unreachable_checks = 0;
  // Down from the start: this many checks before any sandbox (-1: every one).
  int unreachable_at_start = 0;

  const char* name() const override { return "fake"; }
  Status check_policy(const lazyagent::Config&) const override { return lazyagent::ok_status(); }
  void adapt_policy(lazyagent::SandboxPolicy*) const override {}
  nlohmann::json policy_json(const lazyagent::SandboxPolicy&, const lazyagent::Config&) const override {
    return {{"runtime", "fake"}};
  }
  Status check(const lazyagent::ProgressFn&) override {
    calls.push_back("check");
    if (fail_check) return lazyagent::engine_error("the fake engine does not answer");
    return lazyagent::ok_status();
  }
  Status after_outage() override {
    calls.push_back("after_outage");
    if (run_ids.empty()) {
      if (unreachable_at_start == 0) return lazyagent::ok_status();
      if (unreachable_at_start > 0) --unreachable_at_start;
      return Error{ErrorKind::kUnreachable, "the fake engine is away"};
    }
    if (unreachable_checks == 0) return lazyagent::ok_status();
    if (unreachable_checks > 0) --unreachable_checks;
    return Error{ErrorKind::kUnreachable, "the fake engine is away"};
  }
  Result<std::string> image_digest(const std::string&) override {
    calls.push_back("image");
    return std::string("sha256:fake");
  }
  Result<std::unique_ptr<lazyagent::Sandbox>> prepare_sandbox(const lazyagent::SandboxSpec& spec) override;
  Status check_planner(const lazyagent::Config&) override {
    calls.push_back("check_planner");
    return lazyagent::ok_status();
  }
  Result<std::string> planner_image_digest(const lazyagent::Config&) override { return std::string("sha256:planner"); }
  Result<lazyagent::ProviderStored> store_provider(const lazyagent::Config&, const lazyagent::ProviderValues&) override {
    calls.push_back("store_provider");
    return lazyagent::ProviderStored{};
  }
  Result<std::unique_ptr<lazyagent::Container>> prepare_planner(const lazyagent::PlannerSpec& spec) override;
  Result<lazyagent::ReapReport> reap(bool) override {
    calls.push_back("reap");
    return lazyagent::ReapReport{};
  }
  Result<bool> sandbox_exists(const std::string& id) override {
    calls.push_back("exists " + id);
    return false;
  }
  Result<std::vector<std::string>> left_by_process(int) override {
    calls.push_back("left_by_process");
    return std::vector<std::string>{};
  }
};

class Sandbox : public lazyagent::Sandbox {
 public:
  Sandbox(Engine& e, Run run, std::string id) : e_(e), run_(std::move(run)), id_(std::move(id)) { ++e_.alive; }
  ~Sandbox() override {
    if (!removed_) e_.calls.push_back("remove (destructor)");
    --e_.alive;
  }
  std::string id() const override { return created_ ? id_ : ""; }
  Status create() override {
    if (auto st = step("create"); !st) return st;
    created_ = true;
    return lazyagent::ok_status();
  }
  Status verify() override { return step("verify"); }
  Status start() override { return step("start"); }
  Result<ContainerExit> wait(long) override {
    if (auto st = step("wait"); !st) return st.error();
    if (run_.wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(run_.wait_ms));
    return ContainerExit{run_.exit_code, run_.timed_out, ""};
  }
  Result<ContainerLogs> logs(std::size_t) override {
    if (auto st = step("logs"); !st) return st.error();
    ContainerLogs l;
    l.combined = run_.output;
    return l;
  }
  Status remove() override {
    if (auto st = step("remove"); !st) return st;
    removed_ = true;
    return lazyagent::ok_status();
  }
  std::vector<std::string> probe_violations(const lazyagent::ProbeReport&, bool,
                                            std::vector<std::string>*) override {
    return run_.violations;
  }

 private:
  Status step(const std::string& name) {
    e_.calls.push_back(name);
    if (run_.signal_at == name) lazyagent::set_interrupted_for_test(2);
    if (run_.fail_at != name) return lazyagent::ok_status();
    if (run_.fail_kind == ErrorKind::kInterrupted) lazyagent::set_interrupted_for_test(2);
    return Error{run_.fail_kind, "the fake engine failed at " + name};
  }

  Engine& e_;
  Run run_;
  std::string id_;
  bool created_ = false;
  bool removed_ = false;
};

class Planner : public lazyagent::Container {
 public:
  Planner(Engine& e, Plan plan) : e_(e), plan_(std::move(plan)) { ++e_.alive; }
  ~Planner() override { --e_.alive; }
  std::string id() const override { return "planner-1"; }
  Status create() override { return note("planner create"); }
  Status verify() override { return note("planner verify"); }
  Status start() override { return note("planner start"); }
  Result<ContainerExit> wait(long) override {
    e_.calls.push_back("planner wait");
    return ContainerExit{plan_.exit_code, false, ""};
  }
  Result<ContainerLogs> logs(std::size_t) override {
    e_.calls.push_back("planner logs");
    ContainerLogs l;
    l.out = plan_.patch;
    l.err = plan_.log;
    return l;
  }
  Status remove() override { return note("planner remove"); }

 private:
  Status note(const std::string& call) {
    e_.calls.push_back(call);
    return lazyagent::ok_status();
  }
  Engine& e_;
  Plan plan_;
};

inline Result<std::unique_ptr<lazyagent::Sandbox>> Engine::prepare_sandbox(const lazyagent::SandboxSpec& spec) {
  calls.push_back("prepare");
  run_ids.push_back(spec.run_id);
  commands.push_back(spec.config->test_command);
  Run run = runs.empty() ? passing() : runs.front();
  if (!runs.empty()) runs.pop_front();
  if (run.fail_at == "prepare") return Error{run.fail_kind, "the fake engine failed at prepare"};
  return std::unique_ptr<lazyagent::Sandbox>(std::make_unique<Sandbox>(*this, run, "fake-" + spec.run_id));
}

inline Result<std::unique_ptr<lazyagent::Container>> Engine::prepare_planner(const lazyagent::PlannerSpec& spec) {
  calls.push_back("planner prepare");
  tasks.push_back(*spec.task);
  Plan plan = plans.empty() ? Plan{} : plans.front();
  if (!plans.empty()) plans.pop_front();
  return std::unique_ptr<lazyagent::Container>(std::make_unique<Planner>(*this, plan));
}

}  // namespace fake
