// The eval task file: every bad line named with its number and reason.
#include "catch_compat.h"

#include <fstream>

#include "eval/eval_runner.h"
#include "eval/eval_tasks.h"
#include "contract/patch_contract.h"
#include "unit_tmp.h"

using namespace lazyagent;

namespace {

const std::string kPatch = R"({"files":[{"path":"calculator.py","content":"x = 1\n"}]})";

std::vector<std::string> described(const ParsedTasks& p) {
  std::vector<std::string> out;
  for (const auto& e : p.errors) out.push_back(describe_task_error(e));
  return out;
}

}  // namespace

TEST_CASE("eval tasks: good lines give tasks with defaults and overrides") {
  const std::string text =
      "{\"id\":\"fix-1\",\"seed\":\"seed\",\"allow\":[\"calculator.py\",\"lib/\"],\"test_command\":\"make test\","
      "\"image\":\"localhost/img:1\",\"patch\":" + kPatch + "}\n"
      "\n"
      "   \n"
      "{\"patch\":\"patches/wrong.json\"}\n"
      "{\"id\":\"ask\",\"instruction\":\"fix add\"}\n";
  ParsedTasks p = parse_task_lines(text);
  REQUIRE(described(p).empty());
  REQUIRE(p.tasks.size() == 3);
  const EvalTask& a = p.tasks[0];
  CHECK(a.line == 1);
  CHECK(a.id == "fix-1");
  CHECK(a.seed == "seed");
  CHECK(a.has_allow);
  CHECK(a.allow == std::vector<std::string>{"calculator.py", "lib/"});
  CHECK(a.test_command == "make test");
  CHECK(a.image == "localhost/img:1");
  CHECK(a.patch_file.empty());
  // The inline patch is judged by the contract exactly like the file form.
  ContractLimits limits;
  limits.allow = {"calculator.py"};
  CHECK(validate_patch_json(a.patch_json, limits).ok());
  CHECK(validate_patch_json(a.patch_json, limits).patch.files[0].content == "x = 1\n");

  CHECK(p.tasks[1].id == "line-4");  // blank lines count for numbering
  CHECK(p.tasks[1].patch_file == "patches/wrong.json");
  CHECK_FALSE(p.tasks[1].has_allow);
  CHECK(p.tasks[2].is_instruction());
  CHECK(p.tasks[2].instruction == "fix add");
}

TEST_CASE("eval tasks: every bad line is reported with its number and reason") {
  const std::string text =
      "{\"id\":\"ok\",\"patch\":" + kPatch + "}\n"                       // 1 good
      "{\"id\":\"x\",\"patch\":\n"                                      // 2 truncated
      "[1,2]\n"                                                         // 3 not an object
      "{\"sed\":\"seed\",\"patch\":" + kPatch + "}\n"                   // 4 unknown key
      "{\"patch\":" + kPatch + ",\"instruction\":\"fix\"}\n"            // 5 both
      "{\"seed\":\"seed\"}\n"                                           // 6 neither
      "{\"id\":\"../evil\",\"patch\":" + kPatch + "}\n"                 // 7 bad id
      "{\"id\":\"ok\",\"patch\":" + kPatch + "}\n"                      // 8 duplicate id
      "{\"allow\":\"calculator.py\",\"patch\":" + kPatch + "}\n"        // 9 allow not an array
      "{\"patch\":42}\n"                                                // 10 patch a number
      "{\"seed\":\"\",\"patch\":" + kPatch + "}\n"                      // 11 empty seed
      "{\"seed\":\"a\",\"seed\":\"b\",\"patch\":" + kPatch + "}\n"      // 12 duplicate key
      "{\"test_command\":\"\\u00ff\\ud800\",\"patch\":" + kPatch + "}\n";  // 13 lone surrogate
  ParsedTasks p = parse_task_lines(text);
  CHECK(p.tasks.size() == 1);
  CHECK(described(p) == std::vector<std::string>{
      "line 2: malformed_json: not JSON: unexpected end of input at line 1, column 19",
      "line 3: not_an_object: a task must be a JSON object, got an array",
      "line 4: unknown_key: unknown key 'sed' (keys: id, seed, allow, test_command, image, patch, diff, instruction)",
      "line 5: patch_and_instruction: a task has one of 'patch', 'diff' or 'instruction', not several",
      "line 6: no_patch_or_instruction: a task needs 'patch' (an object or a file), 'diff' (a unified diff) or "
      "'instruction'",
      "line 7: bad_id: id '../evil' must be 1-64 characters of [A-Za-z0-9._-], starting with a letter or digit",
      "line 8: duplicate_id: id 'ok' is already used on line 1",
      "line 9: bad_type: 'allow' must be an array of paths, got a string",
      "line 10: bad_type: 'patch' must be a patch object or a file path, got a number",
      "line 11: empty_value: 'seed' is empty",
      "line 12: duplicate_key: key 'seed' appears more than once",
      "line 13: invalid_utf8: 'test_command' is not valid UTF-8",
  });
}

TEST_CASE("eval tasks: an empty file and a control character in a key") {
  CHECK(described(parse_task_lines("\n \n")) ==
        std::vector<std::string>{"no_tasks: the task file holds no task"});
  ParsedTasks p = parse_task_lines("{\"a\\u001b[2Jb\":1,\"patch\":{}}");
  REQUIRE(p.errors.size() == 1);
  CHECK(p.errors[0].message.find('\x1b') == std::string::npos);
  CHECK(p.errors[0].message.find("\\x1b[2Jb") != std::string::npos);
}

TEST_CASE("eval tasks: an inline patch keeps what the contract must see") {
  // Invalid UTF-8 (a lone surrogate) and a duplicate key survive the round trip.
  ParsedTasks p = parse_task_lines(
      R"({"patch":{"files":[{"path":"calculator.py","content":"a\ud800"}],"files":[]}})");
  REQUIRE(p.ok());
  ContractLimits limits;
  limits.allow = {"calculator.py"};
  ContractResult c = validate_patch_json(p.tasks[0].patch_json, limits);
  REQUIRE_FALSE(c.ok());
  std::vector<std::string> codes;
  for (const auto& f : c.findings) codes.push_back(f.code);
  CHECK(std::find(codes.begin(), codes.end(), "bad_shape") != codes.end());
}

TEST_CASE("eval tasks: patch files and seeds resolve against the task file's directory") {
  Tmp t;
  std::ofstream(t.path + "/p.json") << kPatch;
  std::filesystem::create_directories(t.path + "/s");
  ParsedTasks p = parse_task_lines(
      "{\"id\":\"a\",\"seed\":\"s\",\"patch\":\"p.json\"}\n"
      "{\"id\":\"b\",\"seed\":\"/abs/seed\",\"patch\":\"missing.json\"}\n"
      "{\"id\":\"c\",\"patch\":\".\"}\n");
  REQUIRE(p.ok());
  resolve_task_files(&p, t.path);
  CHECK(p.tasks[0].seed == t.path + "/s");
  CHECK(p.tasks[0].patch_json == kPatch);
  CHECK(p.tasks[1].seed == "/abs/seed");
  CHECK(described(p) == std::vector<std::string>{
      "line 2: unreadable_seed: seed /abs/seed: no such directory",
      "line 2: unreadable_patch_file: cannot read the patch file '" + t.path + "/missing.json'",
      "line 3: unreadable_patch_file: cannot read the patch file '" + t.path + "/.'",
  });
}

TEST_CASE("eval tasks: a seed that is a file, or missing, is the task's error, before anything runs") {
  Tmp t;
  std::ofstream(t.path + "/p.json") << kPatch;
  std::ofstream(t.path + "/file") << "x";
  ParsedTasks p = parse_task_lines("{\"id\":\"a\",\"seed\":\"file\",\"patch\":\"p.json\"}\n"
                                   "{\"id\":\"b\",\"seed\":\"gone/x\",\"patch\":\"p.json\"}\n");
  REQUIRE(p.ok());
  resolve_task_files(&p, t.path);
  CHECK(described(p) == std::vector<std::string>{
      "line 1: unreadable_seed: seed " + t.path + "/file is not a directory",
      "line 2: unreadable_seed: seed " + t.path + "/gone/x: no such directory",
  });
}

TEST_CASE("eval tasks: the task hash changes with any field, and config overrides apply") {
  ParsedTasks p = parse_task_lines("{\"id\":\"a\",\"patch\":" + kPatch + "}");
  REQUIRE(p.ok());
  EvalTask t = p.tasks[0];
  const std::string h = task_sha256(t);
  CHECK(h.size() == 64);
  EvalTask u = t;
  u.test_command = "true";
  CHECK(task_sha256(u) != h);
  u = t;
  u.patch_json += " ";
  CHECK(task_sha256(u) != h);
  u = t;
  u.has_allow = true;  // an empty allow list is not the config's list
  CHECK(task_sha256(u) != h);

  Config base;
  base.seed = "/base";
  u = t;
  u.image = "localhost/other:1";
  u.has_allow = true;
  Config c = task_config(base, u);
  CHECK(c.seed == "/base");
  CHECK(c.images.sandbox == "localhost/other:1");
  CHECK(c.allow.empty());
  CHECK(task_config(base, t).allow == base.allow);
}

TEST_CASE("a task's diff is its patch text, patch, diff and instruction exclude each other", "[eval_tasks]") {
  const ParsedTasks p = parse_task_lines(
      "{\"id\":\"d\",\"diff\":\"--- a/calculator.py\\n+++ b/calculator.py\\n@@ -1 +1 @@\\n-a\\n+b\\n\"}\n"
      "{\"id\":\"both\",\"diff\":\"x\",\"instruction\":\"y\"}\n"
      "{\"id\":\"num\",\"diff\":3}\n");
  REQUIRE(p.tasks.size() == 1);
  CHECK(p.tasks[0].patch_json == "--- a/calculator.py\n+++ b/calculator.py\n@@ -1 +1 @@\n-a\n+b\n");
  REQUIRE(p.errors.size() == 2);
  CHECK(p.errors[0].code == "patch_and_instruction");
  CHECK(p.errors[1].code == "bad_type");
}
