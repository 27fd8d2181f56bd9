// `run` runs the baseline before the planner (config planner.baseline_first):
// the real CLI, real podman, the planner image with this binary
// (LAZYAGENT_IT_PLANNER_IMAGE), the sandbox, and the scripted provider whose
// reply `require`s what the task must hold (a missing string is a 400 and the
// run fails).
//
// The seed: 300 modules under pkg/, and the failing test's traceback going
// through zzz/target.py (editable) into zzz/core.py, which sorts last and is
// beyond the 4096-byte context budget unless the baseline names it.
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

const std::string kBaselineKey = "sk-lazyagent-baseline-it-0123456789abcdef";

std::string traceback_seed(const TempDir& dir) {
  const std::string root = many_module_seed(dir);
  std::ofstream(root + "/zzz/core.py") << "\"\"\"Combining numbers.\"\"\"\n\n\ndef combine(a, b, sign):\n"
                                          "    if sign not in (1, -1):\n"
                                          "        raise ValueError(\"sign must be 1 or -1, got %r\" % (sign,))\n"
                                          "    return a + sign * b\n";
  std::ofstream(root + "/zzz/target.py") << "from zzz.core import combine\n\n\ndef add(a, b):\n"
                                            "    return combine(a, b, 0)\n";
  return root;
}

const std::string kFix =
    "```diff\n--- a/zzz/target.py\n+++ b/zzz/target.py\n@@ -2,4 +2,4 @@\n \n \n def add(a, b):\n"
    "-    return combine(a, b, 0)\n+    return combine(a, b, 1)\n```\n";

lazyagent::StubScript script(const json& replies) {
  auto s = lazyagent::parse_stub_script(json{{"api_key", kBaselineKey}, {"replies", replies}}.dump());
  REQUIRE(s.ok());
  return *s;
}

const std::vector<std::string> kArgs = {"--allow", "zzz/target.py", "--test-command", "python3 -m unittest -v"};

std::vector<std::string> args_for(const std::string& seed, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"--seed", seed};
  a.insert(a.end(), kArgs.begin(), kArgs.end());
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

bool included(const json& context, const std::string& path, const std::string& why) {
  for (const auto& f : context["included"]) {
    if (f["path"] == path && (why.empty() || f["why"] == why)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("baseline first: the task holds the failing test, its traceback and the file it names, cut otherwise",
          "[planner][baseline]") {
  TempDir dir;
  const std::string seed = traceback_seed(dir);
  PodmanProvider provider(
      script(json::array({{{"content", kFix},
                           {"require",
                            {"Before any change the tests do not pass. Failing (1): ",
                             "test_target.TargetTest.test_add", "zzz/core.py\", line 6, in combine",
                             "ValueError: sign must be 1 or -1, got 0", "=== zzz/core.py (read-only) ===\n"}}}})),
      kBaselineKey, 0, "planner:\n  context_bytes: 4096\n");
  CliResult r = provider.run(args_for(seed));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(provider.stub().requests() == 1);
  CHECK(j["timings"].contains("baseline"));
  CHECK(j["triage"]["fixed"] == json::array({"test_target.TargetTest.test_add"}));
  CHECK(j["triage"]["baseline"]["cached"] == false);
  // The task record says why core.py is in, and `task show` prints it.
  const std::string task_id = j["planner"]["task_id"];
  CliResult rec = run_cli({provider.state.path()}, {"task", "show", task_id, "--json"});
  REQUIRE(rec.exit_code == 0);
  const json ctx = json::parse(rec.out)["context"];
  CHECK(included(ctx, "zzz/core.py", "named_by_baseline"));
  CHECK(ctx["baseline"]["named"] == json::array({"test_target.py", "zzz/core.py", "zzz/target.py"}));
  CliResult show = run_cli({provider.state.path()}, {"task", "show", task_id});
  INFO(show.out);
  CHECK(show.out.find("baseline:   1 test(s) failing before the patch (test_target.TargetTest.test_add), ") !=
        std::string::npos);
  CHECK(show.out.find("; it names test_target.py, zzz/core.py, zzz/target.py\n") != std::string::npos);

  // Again: the baseline comes from the cache, looked up before any run.
  CliResult again = provider.run(args_for(seed));
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  const json k = json::parse(again.out);
  CHECK(k["triage"]["baseline"]["cached"] == true);
  CHECK(k["triage"]["baseline"]["run_id"] == j["triage"]["baseline"]["run_id"]);
  CHECK(provider.stub().requests() == 2);

  // --no-baseline keeps today's order: no baseline, core.py cut by the budget.
  PodmanProvider plain(script(json::array({{{"content", kFix}}})), kBaselineKey, 0, "planner:\n  context_bytes: 4096\n");
  CliResult off = plain.run(args_for(seed, {"--no-baseline"}));
  INFO(off.out << off.err);
  REQUIRE(off.exit_code == 0);
  const json o = json::parse(off.out);
  CHECK_FALSE(o["timings"].contains("baseline"));
  CHECK(o["triage"]["baseline"] == "off");
  CliResult off_rec = run_cli({plain.state.path()}, {"task", "show", o["planner"]["task_id"].get<std::string>(), "--json"});
  const json off_ctx = json::parse(off_rec.out)["context"];
  CHECK_FALSE(included(off_ctx, "zzz/core.py", ""));
  CHECK_FALSE(off_ctx.contains("baseline"));
  CHECK(plain.stub().request_log()[0].find("Before any change") == std::string::npos);
  for (const auto& body : provider.stub().request_log()) CHECK(body.find(kBaselineKey) == std::string::npos);
}
