// The planner's tool loop against a real ProviderStub on a loopback port,
// scripted with tool calls; the stub checks each tool result it receives
// (require_last) and fails the request when one is wrong.
#include "catch_compat.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "provider/planner_loop.h"
#include "provider/provider_stub.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

const std::string kLoopKey = "sk-loop-SECRET-0123456789";

struct Scripted {
  ProviderStub stub;
  int port = 0;
  explicit Scripted(const json& replies)
      : stub([&] {
          auto s = parse_stub_script(json{{"api_key", kLoopKey}, {"replies", replies}}.dump());
          REQUIRE(s.ok());
          return *s;
        }()) {
    auto p = stub.listen("127.0.0.1", 0);
    REQUIRE(p.ok());
    port = *p;
  }
  ProviderSettings settings() const {
    ProviderSettings s;
    s.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    s.model = "stub";
    s.api_key = kLoopKey;
    s.max_retries = 0;
    s.backoff_ms = 1;
    return s;
  }
};

struct Project {
  Tmp tmp;
  std::string root;
  Project() {
    root = tmp.path + "/seed";
    std::filesystem::create_directories(root + "/zz");
    std::ofstream(root + "/zz/calc.py") << "def add(a, b):\n    return a - b\n";
    std::ofstream(root + "/keyfile.txt") << "token=" << kLoopKey << "\n";
    std::ofstream(tmp.path + "/outside.txt") << "OUTSIDE\n";
    std::filesystem::create_symlink(tmp.path + "/outside.txt", root + "/out");
  }
};

PlannerTask task_with_loop() {
  PlannerTask t;
  t.task_id = "t-loop";
  t.instruction = "Fix add.";
  t.test_command = "python3 -m unittest";
  t.contract.allow = {"zz/calc.py"};
  t.patch_format = "diff";
  t.loop.tools = true;
  t.loop.max_turns = 10;
  return t;
}

json call(const std::string& name, json args) { return {{"name", name}, {"arguments", std::move(args)}}; }

const std::string kDiff =
    "--- a/zz/calc.py\n+++ b/zz/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";

}  // namespace

TEST_CASE("planner loop: list, search, read, submit a diff, each result checked by the stub") {
  Project p;
  Scripted s(json::array(
      {{{"tool_calls", {call("list_files", {{"glob", "**/*.py"}})}}, {"require", "call submit_patch once"}},
       {{"tool_calls", {call("search", {{"regex", "def add"}})}}, {"require_last", "zz/calc.py 32"}},
       {{"tool_calls", {call("read_file", {{"path", "zz/calc.py"}})}}, {"require_last", "zz/calc.py:1: def add(a, b):"}},
       {{"tool_calls", {call("submit_patch", {{"diff", kDiff}})}}, {"require_last", "2:     return a - b"}}}));
  const SnapshotTools tools(p.root, {});
  std::vector<std::string> log;
  auto out = run_tool_loop(s.settings(), task_with_loop(), tools, [&](const std::string& l) { log.push_back(l); });
  REQUIRE(out.ok());
  CHECK(out->stop == LoopStop::kSubmitted);
  CHECK(out->reply == kDiff);
  CHECK(out->turns == 4);
  CHECK(out->usage.total_tokens == 4 * 46);
  REQUIRE(out->calls.size() == 4);
  CHECK(out->calls[0]["name"] == "list_files");
  CHECK(out->calls[2]["arguments"] == R"({"path":"zz/calc.py"})");
  CHECK(out->calls[2]["result_bytes"].get<std::size_t>() > 0);
  // The requests carried the tools and the tool turns.
  const auto bodies = s.stub.request_log();
  REQUIRE(bodies.size() == 4);
  const json last = json::parse(bodies.back());
  CHECK(last["tools"].size() == 4);
  CHECK(last["tool_choice"] == "auto");
  CHECK(last["messages"].back()["role"] == "tool");
  CHECK(last["messages"].back()["tool_call_id"] == "call_2_0");
  for (const auto& l : log) CHECK(l.find(kLoopKey) == std::string::npos);
}

TEST_CASE("planner loop: hostile tool calls get bounded errors and the loop goes on") {
  Project p;
  Scripted s(json::array(
      {{{"tool_calls", {call("read_file", {{"path", "../outside.txt"}})}}},
       {{"tool_calls", {call("read_file", {{"path", "/etc/passwd"}})}}, {"require_last", "error (bad_path)"}},
       {{"tool_calls", {call("read_file", {{"path", "out"}})}}, {"require_last", "error (bad_path): absolute path"}},
       {{"tool_calls", {call("read_file", {{"path", "zz/calc.py"}, {"start_line", 1}, {"end_line", 99999999}})}},
        {"require_last", "error (path_escapes)"}},
       {{"tool_calls", {call("search", {{"regex", "(((a{100}){100}){100})"}})}}, {"require_last", "error (range_too_large)"}},
       {{"tool_calls", {call("read_file", {{"path", "keyfile.txt"}})}}, {"require_last", "error (bad_regex)"}},
       {{"tool_calls", {call("submit_patch", json::object())}}, {"require_last", "token=[redacted]"}},
       {{"tool_calls", {call("submit_patch", {{"diff", kDiff}})}}, {"require_last", "error (bad_arguments)"}}}));
  const SnapshotTools tools(p.root, {});
  auto out = run_tool_loop(s.settings(), task_with_loop(), tools, {});
  REQUIRE(out.ok());
  CHECK(out->stop == LoopStop::kSubmitted);
  CHECK(out->turns == 8);
  for (const auto& body : s.stub.request_log()) CHECK(body.find(kLoopKey) == std::string::npos);
  CHECK(out->calls.dump().find(kLoopKey) == std::string::npos);
}

TEST_CASE("planner loop: the turn cap and the token cap stop it with a stop_reason") {
  Project p;
  const json forever = json::array({{{"tool_calls", {call("list_files", json::object())}}}});
  {
    Scripted s(forever);
    PlannerTask t = task_with_loop();
    t.loop.max_turns = 3;
    auto out = run_tool_loop(s.settings(), t, SnapshotTools(p.root, {}), {});
    REQUIRE(out.ok());
    CHECK(out->stop == LoopStop::kMaxTurns);
    CHECK(std::string(loop_stop_name(out->stop)) == "max_turns");
    CHECK(out->turns == 3);
    CHECK(out->reply.empty());
  }
  {
    Scripted s(forever);
    PlannerTask t = task_with_loop();
    t.loop.max_tokens = 100;  // 46 a turn: stops after the third
    auto out = run_tool_loop(s.settings(), t, SnapshotTools(p.root, {}), {});
    REQUIRE(out.ok());
    CHECK(out->stop == LoopStop::kMaxTokens);
    CHECK(out->turns == 3);
    CHECK(out->usage.total_tokens == 138);
  }
}

TEST_CASE("planner loop: loop_seconds stops a slow model between turns with stop_reason loop_seconds") {
  Project p;
  // Each reply takes 400 ms; the wall-time cap is 1 s and the turn cap 10:
  // the loop stops after the turn that crosses 1 s (the third, or the second
  // on a slow machine), never at the turn cap, and the turn in flight ends first.
  Scripted s(json::array({{{"tool_calls", {call("list_files", json::object())}}, {"delay_ms", 400}}}));
  PlannerTask t = task_with_loop();
  t.loop.loop_seconds = 1;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = run_tool_loop(s.settings(), t, SnapshotTools(p.root, {}), {});
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(out.ok());
  CHECK(out->stop == LoopStop::kLoopSeconds);
  CHECK(std::string(loop_stop_name(out->stop)) == "loop_seconds");
  CHECK(out->turns >= 2);
  CHECK(out->turns <= 3);
  CHECK(s.stub.requests() == out->turns);
  CHECK(out->reply.empty());
  CHECK(ms >= 1000);
  CHECK(ms < 2500);
}

TEST_CASE("planner loop: a provider that refuses tools gets the request without them") {
  Project p;
  Scripted s(json::array({{{"match", "\"tool_choice\""}, {"status", 400},
                           {"content", "tools param requires --jinja flag"}},
                          {{"content", "```diff\n" + kDiff + "```\n"}}}));
  auto out = run_tool_loop(s.settings(), task_with_loop(), SnapshotTools(p.root, {}), {});
  REQUIRE(out.ok());
  CHECK(out->stop == LoopStop::kAnswered);
  CHECK(out->tools_refusal == "tools param requires --jinja flag");
  CHECK(out->reply == "```diff\n" + kDiff + "```\n");
  CHECK(out->attempts == 2);
  const auto bodies = s.stub.request_log();
  REQUIRE(bodies.size() == 2);
  CHECK_FALSE(json::parse(bodies[1]).contains("tools"));
}

TEST_CASE("planner loop: submit_patch with files gives the files JSON") {
  auto p = submitted_patch(R"({"files":[{"path":"a.py","content":"x\n"}]})");
  REQUIRE(p.ok());
  CHECK(*p == R"({"files":[{"content":"x\n","path":"a.py"}]})");
  CHECK(submitted_patch(R"({"diff":""})").error().kind == ErrorKind::kPatch);
}
