// The planner's read-only tool loop end to end (issue 16): the real CLI, real
// podman, the planner image with this binary (LAZYAGENT_IT_PLANNER_IMAGE),
// the sandbox, and the scripted provider replying with tool calls and checking
// every tool result it receives (require / require_last: a wrong result is a
// 400 and the run fails).
//
// The seed is generated here: a few hundred modules, and the file to fix
// sorting last (zzz/target.py), beyond the task's context budget.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const std::string kToolKey = "sk-lazyagent-tools-it-0123456789abcdef";

// 300 modules under pkg/, the test, and zzz/target.py with add() wrong.
std::string many_file_seed(const TempDir& dir) {
  const std::string root = many_module_seed(dir);
  std::ofstream(root + "/zzz/target.py") << "\"\"\"The module to fix.\"\"\"\n\n\ndef add(a, b):\n    return a - b\n";
  return root;
}

const std::string kTargetDiff =
    "--- a/zzz/target.py\n+++ b/zzz/target.py\n@@ -2,4 +2,4 @@\n \n \n def add(a, b):\n-    return a - b\n"
    "+    return a + b\n";

json call(const std::string& name, json args) { return {{"name", name}, {"arguments", std::move(args)}}; }

lazyagent::StubScript script(const json& replies) {
  auto s = lazyagent::parse_stub_script(json{{"api_key", kToolKey}, {"replies", replies}}.dump());
  REQUIRE(s.ok());
  return *s;
}

std::string tools_yaml(const std::string& more = "") {
  return "planner:\n  tools: true\n  context_bytes: 4096\n  max_turns: 8\n" + more;
}

std::vector<std::string> seed_args(const std::string& seed) {
  return {"--seed", seed, "--allow", "zzz/target.py", "--test-command", "python3 -m unittest -v"};
}

// Every file the run left in the state directory holds no key.
void check_no_key(const std::string& state) {
  for (const auto& e : fs::recursive_directory_iterator(state)) {
    if (!e.is_regular_file()) continue;
    INFO(e.path());
    CHECK(read_file(e.path().string()).find(kToolKey) == std::string::npos);
  }
}

}  // namespace

TEST_CASE("tool loop: list, search, read the file the traceback names, hostile calls, submit a diff, the run passes") {
  TempDir dir;
  const std::string seed = many_file_seed(dir);
  PodmanProvider provider(
      script(json::array(
          {{{"tool_calls", {call("list_files", {{"glob", "zzz/*"}})}}, {"require", "call submit_patch once"}},
           {{"tool_calls", {call("search", {{"regex", "^def add"}, {"glob", "*.py"}})}},
            {"require_last", "zzz/target.py 59"}},
           {{"tool_calls",
             {call("read_file", {{"path", "../../etc/passwd"}}), call("read_file", {{"path", "/etc/passwd"}}),
              call("read_file", {{"path", "zzz/target.py"}, {"start_line", 1}, {"end_line", 4000000000LL}}),
              call("search", {{"regex", "((((x{100}){100}){100}){100})"}}),
              call("delete_everything", json::object())}},
            {"require_last", "zzz/target.py:4: def add(a, b):"}},
           {{"tool_calls", {call("read_file", {{"path", "zzz/target.py"}})}},
            {"require", {"error (bad_path): path '../../etc/passwd' has a '..' component",
                         "error (bad_path): absolute path '/etc/passwd'", "error (range_too_large)",
                         "error (bad_regex)", "error (unknown_tool)"}}},
           {{"tool_calls", {call("submit_patch", {{"diff", kTargetDiff}})}}, {"require_last", "5:     return a - b"}}})),
      kToolKey, 0, tools_yaml());
  auto args = seed_args(seed);
  CliResult r = provider.run(args);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(provider.stub().requests() == 5);
  const json loop = j["planner"]["loop"];
  CHECK(loop["turns"] == 5);
  CHECK(loop["stop_reason"] == "submitted");
  CHECK(loop["tool_calls"].size() == 9);
  CHECK(loop["tools_used"]["read_file"] == 4);
  // task show summarises the loop.
  CliResult show = run_cli({provider.state.path()}, {"task", "show", j["planner"]["task_id"].get<std::string>()});
  INFO(show.out);
  CHECK(show.out.find("loop:       5 turn(s) of at most 8, stop_reason submitted; tools: ") != std::string::npos);
  CHECK(show.out.find("tool call:  turn 3 read_file {\"path\":\"/etc/passwd\"} -> ") != std::string::npos);
  check_no_key(provider.state.path());
  for (const auto& body : provider.stub().request_log()) CHECK(body.find(kToolKey) == std::string::npos);
}

TEST_CASE("tool loop: the turn cap stops a model that never submits (exit 4, stop_reason max_turns)") {
  TempDir dir;
  const std::string seed = many_file_seed(dir);
  PodmanProvider provider(script(json::array({{{"tool_calls", {call("list_files", json::object())}}}})), kToolKey, 0,
                          tools_yaml());
  CliResult r = provider.run(seed_args(seed));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 4);
  CHECK(provider.stub().requests() == 8);
  const json j = json::parse(r.out);
  CHECK(j.dump().find("the tool loop stopped without a patch: max_turns") != std::string::npos);
  check_no_key(provider.state.path());
}

TEST_CASE("tool loop: a provider that refuses tools gets the one-shot prompt, and the record says so") {
  TempDir dir;
  const std::string seed = many_file_seed(dir);
  PodmanProvider provider(
      script(json::array({{{"match", "\"tool_choice\""}, {"status", 400}, {"content", "tools are not supported"}},
                          {{"content", "```diff\n" + kTargetDiff + "```\n"}}})),
      kToolKey, 0, tools_yaml());
  CliResult r = provider.run(seed_args(seed));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(j["planner"]["loop"]["tools_refused"] == "tools are not supported");
  CHECK(j["planner"]["loop"]["stop_reason"] == "answered");
}
