// SWE-bench predictions with a seed map become diff tasks; every problem is
// named with its line.
#include "eval/swe_bench.h"

#include "catch_compat.h"

using namespace lazyagent;

namespace {

const char* kMap = R"({"astropy__astropy-12907": "repos/astropy",
  "django__django-11099": {"seed": "/abs/django", "test_command": "python3 tests/runtests.py", "allow": ["django/"], "image": "localhost/django-env"}})";

std::vector<std::string> described(const ParsedTasks& p) {
  std::vector<std::string> out;
  for (const auto& e : p.errors) out.push_back(describe_task_error(e));
  return out;
}

}  // namespace

TEST_CASE("JSON Lines predictions become diff tasks with the map's seeds", "[swe_bench]") {
  const ParsedTasks p = parse_swe_bench_predictions(
      "{\"instance_id\":\"astropy__astropy-12907\",\"model_patch\":\"--- a/x\\n+++ b/x\\n@@ -1 +1 @@\\n-a\\n+b\\n\","
      "\"model_name_or_path\":\"m\"}\n\n"
      "{\"instance_id\":\"django__django-11099\",\"model_patch\":null,\"full_output\":\"...\"}\n",
      kMap, "/maps");
  REQUIRE(p.ok());
  REQUIRE(p.tasks.size() == 2);
  CHECK(p.tasks[0].id == "astropy__astropy-12907");
  CHECK(p.tasks[0].seed == "/maps/repos/astropy");
  CHECK(p.tasks[0].patch_json == "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n");
  CHECK(p.tasks[0].line == 1);
  CHECK(p.tasks[1].seed == "/abs/django");
  CHECK(p.tasks[1].test_command == "python3 tests/runtests.py");
  CHECK(p.tasks[1].allow == std::vector<std::string>{"django/"});
  CHECK(p.tasks[1].has_allow);
  CHECK(p.tasks[1].image == "localhost/django-env");
  CHECK(p.tasks[1].patch_json.empty());  // refused as empty_diff when it runs
  CHECK(p.tasks[1].line == 3);
}

TEST_CASE("a JSON array of predictions is read too", "[swe_bench]") {
  const ParsedTasks p = parse_swe_bench_predictions(
      "[{\"instance_id\":\"astropy__astropy-12907\",\"model_patch\":\"\"}]", kMap, "/m");
  REQUIRE(p.ok());
  CHECK(p.tasks.size() == 1);
}

TEST_CASE("unmapped, duplicate, malformed and unnamed predictions are errors with their lines", "[swe_bench]") {
  const ParsedTasks p = parse_swe_bench_predictions(
      "{\"instance_id\":\"sympy__sympy-1\",\"model_patch\":\"\"}\n"
      "{\"instance_id\":\"astropy__astropy-12907\",\"model_patch\":\"\"}\n"
      "{\"instance_id\":\"astropy__astropy-12907\",\"model_patch\":\"\"}\n"
      "not json\n"
      "{\"model_patch\":\"\"}\n"
      "{\"instance_id\":\"a/b\",\"model_patch\":\"\"}\n"
      "{\"instance_id\":\"x\",\"model_patch\":5}\n",
      kMap, "/m");
  CHECK(described(p) == std::vector<std::string>{
                            "line 1: no_seed_mapping: instance 'sympy__sympy-1' has no entry in the seed map",
                            "line 3: duplicate_id: instance 'astropy__astropy-12907' is predicted more than once",
                            "line 4: malformed_json: not JSON",
                            "line 5: bad_type: 'instance_id' must be a non-empty string",
                            "line 6: bad_id: instance 'a/b' cannot name a result file (1-64 characters of [A-Za-z0-9._-])",
                            "line 7: bad_type: 'model_patch' must be a string (a unified diff) or null"});
}

TEST_CASE("a bad seed map is refused before any prediction is read", "[swe_bench]") {
  CHECK(described(parse_swe_bench_predictions("", "[]", "/m")) ==
        std::vector<std::string>{"bad_seed_map: the seed map must be a JSON object of instance id -> seed"});
  CHECK(described(parse_swe_bench_predictions("", R"({"a": {"seed": "s", "tests": "x"}})", "/m")) ==
        std::vector<std::string>{"bad_seed_map: the seed map entry 'a' has a bad or unknown key 'tests' (keys: seed, "
                                 "test_command, allow, image; strings, allow a list of strings)"});
  CHECK(described(parse_swe_bench_predictions("", R"({"a": 3})", "/m")) ==
        std::vector<std::string>{"bad_seed_map: the seed map entry 'a' must be a seed path or an object"});
}
