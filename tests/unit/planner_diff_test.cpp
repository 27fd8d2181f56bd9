// The planner and diffs: the prompt asks for the configured form (a diff as
// text, no JSON response format), the editable files come first in the view,
// and a diff is found in a reply bare or in one fenced block, kept byte for
// byte (leading spaces of context lines included).
#include "catch_compat.h"

#include "config.h"
#include "contract/planner_task.h"
#include "provider/provider_client.h"

using namespace lazyagent;

namespace {

const std::string kDiff =
    "--- a/calculator.py\n+++ b/calculator.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n";

PlannerTask task_with(const std::string& yaml) {
  SeedSnapshot seed;
  seed.entries.push_back({"README.md", SeedEntry::Kind::kFile, 0644, "read me\n"});
  seed.entries.push_back({"calculator.py", SeedEntry::Kind::kFile, 0644, "def add(a, b):\n    return a - b\n"});
  seed.entries.push_back({"test_calculator.py", SeedEntry::Kind::kFile, 0644, "import unittest\n"});
  auto config = parse_config(yaml, "t.yaml", "/tmp");
  REQUIRE(config.ok());
  return build_task(seed, *config, "fix add", "t-1");
}

}  // namespace

TEST_CASE("patch.format diff: the prompt asks for a unified diff, as text", "[planner]") {
  const PlannerTask t = task_with("patch: {format: diff, max_changed_lines: 50, max_diff_bytes: 4000}\n");
  CHECK(t.patch_format == "diff");
  const ChatRequest req = build_chat_request(t);
  CHECK(req.response_format == ResponseFormat::kNone);
  CHECK(req.json_schema.is_null());
  CHECK(req.messages[0].content.find("Answer with exactly one unified diff") != std::string::npos);
  CHECK(req.messages[0].content.find("50 changed lines and 4000 bytes of diff") != std::string::npos);
  // The task file carries the form and the diff caps to the planner.
  auto back = task_from_json(task_to_json(t).dump());
  REQUIRE(back.ok());
  CHECK(back->patch_format == "diff");
  CHECK(back->contract.max_changed_lines == 50);
  CHECK(back->contract.max_diff_bytes == 4000);
  // The whole-file prompt is unchanged by default.
  const ChatRequest files = build_chat_request(task_with("{}\n"));
  CHECK(files.messages[0].content.find("Answer with exactly one JSON object") != std::string::npos);
}

TEST_CASE("the editable files come first in the planner's view", "[planner]") {
  const PlannerTask t = task_with("allow: [calculator.py]\n");
  REQUIRE(t.files.size() == 3);
  CHECK(t.files[0].path == "calculator.py");
  CHECK(t.files[0].editable);
  CHECK(t.files[1].path == "test_calculator.py");  // tests before other context (planner_task.h)
  CHECK(t.files[2].path == "README.md");
  // Over the budget: an editable file is still shown before any context.
  SeedSnapshot seed;
  seed.entries.push_back({"big_context.txt", SeedEntry::Kind::kFile, 0644, std::string(200, 'x') + "\n", "", 201});
  seed.entries.push_back({"calculator.py", SeedEntry::Kind::kFile, 0644, "x = 1\n", "", 6});
  const PlannerTask small = build_task(seed, parse_config("{}\n", "t", "/tmp").value(), "i", "t-2", 100);
  REQUIRE(small.files.size() == 1);
  CHECK(small.files[0].path == "calculator.py");
  CHECK(small.skipped == std::vector<std::string>{"big_context.txt"});
}

TEST_CASE("a diff is extracted from a reply bare or fenced, byte for byte", "[planner]") {
  CHECK(extract_patch_json(kDiff).value() == kDiff);
  CHECK(extract_patch_json("\n\n" + kDiff + "\n\n").value() == kDiff);
  CHECK(extract_patch_json("The fix:\n\n```diff\n" + kDiff + "```\nThat is all.\n").value() == kDiff);
  CHECK(extract_patch_json("```\n" + kDiff + "```").value() == kDiff);
  // The JSON form is still found.
  CHECK(extract_patch_json("{\"files\":[]}").value() == "{\"files\":[]}");
  auto two = extract_patch_json("```diff\n" + kDiff + "```\n```diff\n" + kDiff + "```\n");
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().message ==
        "the model's reply holds no patch: 2 fenced code blocks, want exactly one JSON object or unified diff");
  auto prose = extract_patch_json("Change the minus to a plus.");
  REQUIRE_FALSE(prose.ok());
  CHECK(prose.error().message ==
        "the model's reply holds no patch: it is neither a JSON object, nor a unified diff, nor one fenced code block");
}

TEST_CASE("a diff carrying the API key is refused like a whole file", "[planner]") {
  ContractLimits l;
  l.allow = {"calculator.py"};
  const PatchCheck c = check_patch_text(
      "--- a/calculator.py\n+++ b/calculator.py\n@@ -1 +1 @@\n-x\n+KEY = 'sk-secret-0123456789'\n", l);
  REQUIRE(c.ok());
  const auto f = secret_findings(c, {"sk-secret-0123456789"});
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "secret_in_content");
  CHECK(f[0].path == "calculator.py");
  CHECK(secret_findings(c, {"other-secret-value"}).empty());
}
