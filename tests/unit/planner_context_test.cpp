// The planner's context within a budget (planner_task.h build_task): what
// goes in first, what is cut and why, and the record of it.
#include "catch_compat.h"

#include "config.h"
#include "contract/planner_task.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

SeedEntry file(const std::string& path, const std::string& content) {
  return {path, SeedEntry::Kind::kFile, 0644, content, "", content.size()};
}

}  // namespace

TEST_CASE("planner context: editable, then named by the instruction or the failure, then tests, then the rest", "[planner]") {
  SeedSnapshot seed;
  seed.entries.push_back(file("aaa/helpers.py", std::string(300, 'h') + "\n"));
  seed.entries.push_back(file("lib/parser.py", "def parse():\n    pass\n"));
  seed.entries.push_back(file("tests/test_z.py", "import unittest\n"));
  seed.entries.push_back(file("zzz/target.py", "def add(a, b):\n    return a - b\n"));
  seed.entries.push_back(file("zzz/blob.bin", std::string("\0\1\2", 3)));
  const Config config = parse_config("allow: [zzz/target.py]\n", "t.yaml", "/tmp").value();
  AttemptFeedback fb;
  fb.attempt = 1;
  fb.test_output = "Traceback (most recent call last):\n  File \"/work/lib/parser.py\", line 2, in parse\n";
  const PlannerTask t = build_task(seed, config, "Fix add.", "t-1", 200, &fb);
  REQUIRE(t.files.size() == 3);
  CHECK(t.files[0].path == "zzz/target.py");
  CHECK(t.files[1].path == "lib/parser.py");
  CHECK(t.files[2].path == "tests/test_z.py");
  CHECK(t.skipped == std::vector<std::string>{"aaa/helpers.py", "zzz/blob.bin"});
  const json& c = t.context;
  CHECK(c["budget_bytes"] == 200);
  CHECK(c["used_bytes"] == 32 + 22 + 16);
  // The repository map is outside the budget, in the estimate.
  CHECK(c["map_bytes"] == t.repo_map.size());
  CHECK(t.repo_map.rfind("aaa/helpers.py (301 B)\nlib/parser.py (22 B)\n  def parse()\n", 0) == 0);
  CHECK(c["token_estimate"] == (70 + t.repo_map.size() + 3) / 4);
  CHECK(c["included"][0]["why"] == "editable");
  CHECK(c["included"][1]["why"] == "named");
  CHECK(c["included"][2]["why"] == "test");
  CHECK(c["cut"] == 2);
  CHECK(c["cut_sample"] == json::parse(R"([{"path":"aaa/helpers.py","why":"over_budget"},{"path":"zzz/blob.bin","why":"binary"}])"));
  // Without the failure, the parser is only a source file: the test goes first.
  const PlannerTask plain = build_task(seed, config, "Fix add.", "t-2", 200);
  CHECK(plain.files[1].path == "tests/test_z.py");
  // A module named in the instruction counts as named.
  CHECK(build_task(seed, config, "Look at parser, then fix add.", "t-4", 200).files[1].path == "lib/parser.py");
}

TEST_CASE("planner context: the list of files not shown is bounded in the prompt", "[planner]") {
  SeedSnapshot seed;
  for (int i = 0; i < 5000; ++i) seed.entries.push_back(file("pkg/module_" + std::to_string(i) + ".py", "x = 1\n"));
  const Config config = parse_config("allow: [pkg/module_0.py]\n", "t.yaml", "/tmp").value();
  const PlannerTask t = build_task(seed, config, "Fix it.", "t-1", 1024);
  CHECK(t.skipped.size() > 4000);
  const ChatRequest req = build_chat_request(t);
  CHECK(t.repo_map.size() <= 16 * 1024 + 64);
  CHECK(req.messages[1].content.size() < 24 * 1024 + t.repo_map.size());
  CHECK(req.messages[1].content.find(" more\n") != std::string::npos);
}

TEST_CASE("planner config: the planner section reaches the task, bad values name the key", "[planner]") {
  auto config = parse_config("planner:\n  tools: true\n  context_bytes: 4096\n  max_turns: 7\n  tool_result_bytes: 2048\n"
                             "  loop_seconds: 60\n  tool_choice: required\n  max_reply_tokens: 300\n",
                             "cfg.yaml", "/tmp");
  REQUIRE(config.ok());
  CHECK(config->planner.context_bytes == 4096);
  const PlannerTask t = build_task(SeedSnapshot{}, *config, "x", "t-1");
  CHECK(t.loop.tools);
  CHECK(t.loop.max_turns == 7);
  CHECK(t.loop.tool_choice == "required");
  auto back = task_from_json(task_to_json(t).dump());
  REQUIRE(back.ok());
  CHECK(back->loop.tools);
  CHECK(back->loop.max_turns == 7);
  CHECK(back->loop.tool_result_bytes == 2048);
  CHECK(back->loop.loop_seconds == 60);
  CHECK(back->loop.tool_choice == "required");
  CHECK(back->loop.max_reply_tokens == 300);
  auto bad = parse_config("planner:\n  max_turns: 0\n  tool_choice: sometimes\n  tols: true\n", "cfg.yaml", "/tmp");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("cfg.yaml: planner.max_turns: must be between 1 and 200, got 0") != std::string::npos);
  CHECK(bad.error().message.find("cfg.yaml: planner.tool_choice: expected 'auto' or 'required', got 'sometimes'") !=
        std::string::npos);
  CHECK(bad.error().message.find("planner.tols") != std::string::npos);
}
