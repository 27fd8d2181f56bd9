// The baseline's failing tests in the planner's context (planner_task.h
// BaselineFacts, traceback_paths.h): which seed files a run's output points
// at, and what the task and the prompt then hold.
#include "catch_compat.h"

#include "config.h"
#include "contract/planner_task.h"
#include "contract/traceback_paths.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

SeedEntry file(const std::string& path, const std::string& content) {
  return {path, SeedEntry::Kind::kFile, 0644, content, "", content.size()};
}

const std::vector<std::string> kPaths = {"pkg/core.py",  "pkg/util.py",  "test_core.py", "uuid/uuid_test.go",
                                         "uuid/uuid.go", "src/lib.rs",   "src/a.c",      "other/core.py",
                                         "web/app.js",   "tests/test_x.py"};

}  // namespace

TEST_CASE("traceback paths: Python, pytest, Go, Rust, C and Node locations select seed files", "[planner]") {
  // Python: absolute paths in the sandbox (/work/...), innermost frame last.
  CHECK(paths_named_by_output("Traceback (most recent call last):\n"
                              "  File \"/work/test_core.py\", line 8, in test_add\n"
                              "  File \"/work/pkg/core.py\", line 3, in add\n"
                              "  File \"/usr/lib/python3.11/unittest/case.py\", line 57, in run\n",
                              kPaths) == std::vector<std::string>{"test_core.py", "pkg/core.py"});
  // pytest's short form, and a repeated mention counts once.
  CHECK(paths_named_by_output("tests/test_x.py:12: in test_y\npkg/util.py:4: AssertionError\ntests/test_x.py:13: x\n",
                              kPaths) == std::vector<std::string>{"tests/test_x.py", "pkg/util.py"});
  // Go names files relative to the package: the seed path ends with it.
  CHECK(paths_named_by_output("    uuid_test.go:42: got 1, want 4\n--- FAIL: TestVersion (0.00s)\n", kPaths) ==
        std::vector<std::string>{"uuid/uuid_test.go"});
  // Rust panics, C compiler errors, Node stacks.
  CHECK(paths_named_by_output("thread 'x' panicked at src/lib.rs:10:5:\nassertion failed", kPaths) ==
        std::vector<std::string>{"src/lib.rs"});
  CHECK(paths_named_by_output("src/a.c:3:5: error: expected ';'\n", kPaths) == std::vector<std::string>{"src/a.c"});
  CHECK(paths_named_by_output("    at add (/work/web/app.js:7:11)\n", kPaths) == std::vector<std::string>{"web/app.js"});
  // A path relative to where the test command changed directory (`cd test && python3 x.py`):
  // every seed file it can be, in the seed's order.
  CHECK(paths_named_by_output("  File \"core.py\", line 3\n", kPaths) ==
        std::vector<std::string>{"pkg/core.py", "other/core.py"});
  CHECK(paths_named_by_output("  File \"test_x.py\", line 3\n", kPaths) == std::vector<std::string>{"tests/test_x.py"});
  // Not locations: words, times, versions, a path outside the seed.
  CHECK(paths_named_by_output("core.py failed at 12:30:45; python3.11 /etc/passwd:1: x\n", kPaths).empty());
  // Bounded.
  CHECK(paths_named_by_output("pkg/core.py:1: a\npkg/util.py:2: b\nsrc/a.c:3: c\n", kPaths, 2).size() == 2);
}

TEST_CASE("planner context: the files the baseline's traceback names come right after the editable ones", "[planner]") {
  SeedSnapshot seed;
  seed.entries.push_back(file("aaa/helpers.py", std::string(39, 'h') + "\n"));
  seed.entries.push_back(file("test_target.py", "import unittest\n"));
  seed.entries.push_back(file("zzz/core.py", "def combine(a, b):\n    return a - b\n"));
  seed.entries.push_back(file("zzz/target.py", "from zzz.core import combine\n"));
  const Config config = parse_config("allow: [zzz/target.py]\nplanner: {map_bytes: 0}\n", "t.yaml", "/tmp").value();
  const std::string output =
      "test_add (test_target.TargetTest.test_add) ... FAIL\n"
      "Traceback (most recent call last):\n  File \"/work/test_target.py\", line 7, in test_add\n"
      "  File \"/work/zzz/core.py\", line 2, in combine\nAssertionError: -1 != 5\n\x1b[31mFAILED\x1b[0m\n";
  const BaselineFacts facts = bounded_baseline({"test_target.TargetTest.test_add"}, 1, output);
  // 29 + 16 + 36 bytes fit in 100; helpers.py's 40 do not.
  const PlannerTask t = build_task(seed, config, "Fix add.", "t-1", 100, nullptr, &facts);
  REQUIRE(t.files.size() == 3);
  CHECK(t.skipped == std::vector<std::string>{"aaa/helpers.py"});
  CHECK(t.files[0].path == "zzz/target.py");
  CHECK(t.files[1].path == "test_target.py");
  CHECK(t.files[2].path == "zzz/core.py");
  CHECK(t.context["included"][1]["why"] == "named_by_baseline");
  CHECK(t.context["included"][2]["why"] == "named_by_baseline");
  CHECK(t.context["baseline"]["named"] == json::parse(R"(["test_target.py","zzz/core.py"])"));
  CHECK(t.context["baseline"]["failing"] == json::parse(R"(["test_target.TargetTest.test_add"])"));
  // Without the baseline, core.py is a source file after helpers.py, over the budget.
  const PlannerTask plain = build_task(seed, config, "Fix add.", "t-2", 100);
  CHECK(plain.skipped == std::vector<std::string>{"zzz/core.py"});
  CHECK_FALSE(plain.context.contains("baseline"));
  // The prompt holds the failing test and its output, escaped, and it survives the task file.
  auto back = task_from_json(task_to_json(t).dump());
  REQUIRE(back.ok());
  const std::string user = build_chat_request(*back).messages[1].content;
  CHECK(user.find("Before any change the tests do not pass. Failing (1): test_target.TargetTest.test_add\n") !=
        std::string::npos);
  CHECK(user.find("<<<baseline-output\ntest_add (test_target.TargetTest.test_add) ... FAIL\n") != std::string::npos);
  CHECK(user.find("  File \"/work/zzz/core.py\", line 2, in combine\n") != std::string::npos);
  CHECK(user.find("\\x1b[31mFAILED\\x1b[0m\nbaseline-output>>>\n") != std::string::npos);
  CHECK(user.find('\x1b') == std::string::npos);
}

TEST_CASE("planner context: the baseline facts are bounded, here and when read back", "[planner]") {
  std::vector<std::string> many;
  for (int i = 0; i < 80; ++i) many.push_back("test_" + std::to_string(i) + std::string(400, 'x'));
  const BaselineFacts b = bounded_baseline(many, 80, std::string(20000, 'o') + "END\n");
  CHECK(b.failing.size() == kMaxBaselineFailing);
  CHECK(b.failing[0].size() == kMaxBaselineNameBytes);
  CHECK(b.failing_total == 80);
  CHECK(b.output.size() == kMaxFeedbackOutputBytes);
  CHECK(b.output_cut);
  PlannerTask t = build_task(SeedSnapshot{}, Config{}, "x", "t-1");
  json j = task_to_json(t);
  j["baseline"] = {{"failing", many}, {"failing_total", 80}, {"output", std::string(20000, 'o')}, {"output_cut", false}};
  auto back = task_from_json(j.dump());
  REQUIRE(back.ok());
  CHECK(back->baseline.present);
  CHECK(back->baseline.failing.size() == kMaxBaselineFailing);
  CHECK(back->baseline.output.size() == kMaxFeedbackOutputBytes);
  CHECK(back->baseline.output_cut);
  const std::string user = build_chat_request(*back).messages[1].content;
  CHECK(user.find("Failing (80): ") != std::string::npos);
  CHECK(user.find(" ...\nTheir output (its last 8000 bytes)") != std::string::npos);
}
