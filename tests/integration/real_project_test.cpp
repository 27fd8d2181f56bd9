// A real open-source project end to end (issue 14): PLY 3.11 (Python
// Lex-Yacc), the upstream tree of Debian's `ply` source package, fetched at
// test time by scripts/debian-source.sh (a private deb-src apt configuration,
// cached under /var/cache/lazyagent-oci/debian-src, never committed). Its
// tests are plain unittest scripts that run in the stock sandbox image (only
// python3); five of testlex's check that Python wrote bytecode, so the test
// command unsets the sandbox's PYTHONDONTWRITEBYTECODE (the copy is writable). The test makes it a git repository, commits a one-line bug in
// ply/yacc.py (137 KB), and proves the fix as a unified diff:
//   - through `test`, as `git diff` and as `diff -u` wrote it: the baseline
//     fails 9 yacc tests, the patched copy passes all 85, the triage names
//     the fixed ones;
//   - through `run`: the scripted provider replies with the diff in a fenced
//     ```diff block, the planner (this build's binary, in an image of its own
//     built from the project's planner image) validates it, the orchestrator
//     applies and proves it;
//   - `diff RUN_ID` gives it back, and `apply RUN_ID --branch --switch` commits it.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "ply_repo.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "sk-lazyagent-it-real-project-0123456789";
const std::string& kBug = PlyRepo::kBug;
const std::string& kRight = PlyRepo::kRight;

// The project's planner image with this build's binary in it, under a tag of
// its own (the shared image is rebuilt by scripts/build-images.sh, not here).
struct PlannerImage {
  std::string tag = "localhost/lazyagent-planner:it-diffs-" + std::to_string(getpid());
  TempDir ctx;
  PlannerImage() {
    fs::copy_file(LAZYAGENT_BINARY, ctx.path() + "/lazyagent-oci");
    ctx.file("Containerfile", "FROM localhost/lazyagent-planner:latest\nCOPY lazyagent-oci /usr/local/bin/lazyagent-oci\n");
    REQUIRE(sh("podman build -q --network none -t " + tag + " " + ctx.path() + " >/dev/null 2>&1; echo $?") == "0\n");
  }
  ~PlannerImage() { sh("podman rmi -f " + tag + " >/dev/null 2>&1"); }
};

// The scripted provider's three secrets (names under `prefix`), stored by
// `configure` for the config that names them, and removed when the test ends.
struct StubSecrets {
  std::vector<std::string> names;
  explicit StubSecrets(const std::string& prefix)
      : names{prefix + "_BASE_URL", prefix + "_MODEL", prefix + "_API_KEY"} {}
  StubSecrets(const StubSecrets&) = delete;
  StubSecrets& operator=(const StubSecrets&) = delete;
  ~StubSecrets() {
    for (const auto& n : names) sh("podman secret rm " + n + " >/dev/null 2>&1");
  }
  // PLY's config with this planner image, these secrets and `extra` YAML,
  // configured against the stub listening on `port`; returns its path.
  std::string configure(const PlyRepo& ply, const TempDir& work, const TempDir& state, const PlannerImage& planner,
                        int port, const std::string& extra = "") const {
    const std::string config =
        ply.config(work, "images:\n  planner: " + planner.tag + "\nprovider:\n  secrets:\n    base_url: " + names[0] +
                             "\n    model: " + names[1] + "\n    api_key: " + names[2] + "\n" + extra);
    CliResult conf = run_cli({state.path(),
                              {{names[0], "http://host.containers.internal:" + std::to_string(port) + "/v1"},
                               {names[1], "lazyagent-stub"},
                               {names[2], kKey}}},
                             {"configure", "--config", config});
    INFO(conf.err);
    REQUIRE(conf.exit_code == 0);
    return config;
  }
};

}  // namespace

TEST_CASE("a real project: a one-line fix to PLY's 137 KB yacc.py proven as a unified diff through test",
          "[real-project]") {
  PlyRepo ply;
  TempDir state, work;
  const std::string config = ply.config(work);
  SECTION("as git diff writes it, with the baseline and the triage") {
    const std::string diff = ply.git_diff();
    REQUIRE(diff.rfind("diff --git a/ply/yacc.py b/ply/yacc.py\n", 0) == 0);
    CliResult r = run_cli({state.path()}, {"test", "--config", config, "--patch", work.file("fix.diff", diff), "--json"});
    INFO(r.out.substr(0, 4000) << r.err);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out);
    CHECK(j["tests_passed"] == true);
    CHECK(j["patch_format"] == "diff");
    CHECK(j["changed_paths"] == json::array({"ply/yacc.py"}));
    CHECK(j["diff_stats"]["added"] == 1);
    CHECK(j["diff_stats"]["removed"] == 1);
    CHECK(j["seed_source"]["kind"] == "git");
    CHECK(j["triage"]["fixed"].size() == 9);
    CHECK(j["triage"]["newly_broken"].empty());
    CHECK(j["test_output"].get<std::string>().find("Ran 42 tests") != std::string::npos);
    WARN("PLY seed: " << j["seed_source"].dump() << "; timings " << j["timings"].dump());
  }
  SECTION("as diff -u writes it") {
    const std::string diff = ply.plain_diff();
    REQUIRE(diff.rfind("--- ply/ply/yacc.py\t", 0) == 0);
    CliResult r = run_cli({state.path()}, {"test", "--config", config, "--patch", work.file("fix.diff", diff), "--json",
                                           "--no-baseline"});
    INFO(r.out.substr(0, 4000) << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(json::parse(r.out)["patch_format"] == "diff");
  }
  SECTION("the whole file instead is refused, naming the cap to raise") {
    std::string fixed = read_file(ply.yacc_path());
    fixed.replace(fixed.find(kBug), kBug.size(), kRight);
    CliResult r = run_cli({state.path()}, {"test", "--config", config, "--patch",
                                           work.file("whole.json", patch_json("ply/yacc.py", fixed)), "--json"});
    CHECK(r.exit_code == 4);
    CHECK(json::parse(r.out)["findings"][0]["code"] == "too_large");
  }
}

TEST_CASE("a real project: run, with the scripted provider replying with the diff, then diff and apply --branch",
          "[real-project]") {
  PlyRepo ply;
  PlannerImage planner;
  TempDir state, work;
  lazyagent::StubScript script;
  script.api_key = kKey;
  lazyagent::StubReply reply;
  reply.content = "The index is off by one in YaccProduction.__getitem__:\n\n```diff\n" + ply.git_diff() + "```\n";
  script.replies = {reply};
  lazyagent::ProviderStub stub(script);
  auto port = stub.listen("0.0.0.0", 0);
  REQUIRE(port.ok());
  const StubSecrets secrets("LAZYAGENT_IT_REAL_" + std::to_string(getpid()));
  const std::string config = secrets.configure(ply, work, state, planner, *port);

  CliResult r = run_cli({state.path()}, {"run", "Fix the bug in ply/yacc.py without changing the tests.", "--config",
                                         config, "--json", "--no-baseline"});
  INFO(r.out.substr(0, 4000) << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(j["patch_format"] == "diff");
  CHECK(j["planner"]["status"] == "patch");
  CHECK(j["changed_paths"] == json::array({"ply/yacc.py"}));
  // The prompt asked for a diff and showed the project from the git listing.
  const std::vector<std::string> log = stub.request_log();
  REQUIRE(log.size() == 1);
  CHECK(log[0].find("Answer with exactly one unified diff") != std::string::npos);
  CHECK(log[0].find("=== ply/yacc.py (editable) ===") != std::string::npos);
  CHECK(log[0].find("junk.cpython-311.pyc") == std::string::npos);
  const std::string id = j["run_id"];

  CliResult d = run_cli({state.path()}, {"diff", id});
  REQUIRE(d.exit_code == 0);
  CHECK(d.out.rfind("diff --git a/ply/yacc.py b/ply/yacc.py\n--- a/ply/yacc.py\n+++ b/ply/yacc.py\n@@ -", 0) == 0);
  CHECK(d.out.find("\n-" + kBug + "+" + kRight) != std::string::npos);
  ply_put(work.path() + "/proven.diff", d.out);
  CHECK(sh("git -C " + ply.repo + " apply --check " + work.path() + "/proven.diff 2>&1; echo $?") == "0\n");

  CliResult a = run_cli({state.path()}, {"apply", id, "--branch", "lazyagent/ply-yacc-fix", "--switch", "--json"});
  INFO(a.out << a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(read_file(ply.yacc_path()).find(kRight) != std::string::npos);
  CHECK(sh("git -C " + ply.repo + " log -1 --format=%s") == "lazyagent-oci: apply run " + id + "\n");
  CHECK(sh("git -C " + ply.repo + " diff --stat main HEAD | tail -1") ==
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n");
}

TEST_CASE("a real project through the planner's tool loop: PLY's yacc.py is over the context budget, found and read with the tools",
          "[real-project]") {
  PlyRepo ply;
  PlannerImage planner;
  TempDir state, work;
  // The line of the bug, as read_file numbers it.
  const std::string yacc = read_file(ply.yacc_path());
  const long bug_line = 1 + static_cast<long>(std::count(yacc.begin(), yacc.begin() + static_cast<long>(yacc.find(kBug)), '\n'));
  const auto call = [](const std::string& name, json args) { return json{{"name", name}, {"arguments", std::move(args)}}; };
  const json replies = json::array(
      {{{"tool_calls", {call("list_files", {{"glob", "ply/*.py"}})}}, {"require", "call submit_patch once"}},
       {{"tool_calls", {call("search", {{"regex", "return self\\.slice\\[n - 1\\]"}, {"glob", "*.py"}})}},
        {"require_last", "ply/yacc.py " + std::to_string(yacc.size())}},
       {{"tool_calls", {call("read_file", {{"path", "ply/yacc.py"}, {"start_line", bug_line - 5}, {"end_line", bug_line + 5}})}},
        {"require_last", "ply/yacc.py:" + std::to_string(bug_line) + ": " + kBug.substr(0, kBug.size() - 1)}},
       {{"tool_calls", {call("submit_patch", {{"diff", ply.git_diff()}})}},
        {"require_last", std::to_string(bug_line) + ": " + kBug.substr(0, kBug.size() - 1)}}});
  auto script = lazyagent::parse_stub_script(json{{"api_key", kKey}, {"replies", replies}}.dump());
  REQUIRE(script.ok());
  lazyagent::ProviderStub stub(*script);
  auto port = stub.listen("0.0.0.0", 0);
  REQUIRE(port.ok());
  const StubSecrets secrets("LAZYAGENT_IT_REAL_LOOP_" + std::to_string(getpid()));
  const std::string config = secrets.configure(ply, work, state, planner, *port,
                                               "planner:\n  tools: true\n  context_bytes: 16384\n  max_turns: 6\n");
  CliResult r = run_cli({state.path()}, {"run", "Fix the bug in the yacc module without changing the tests.", "--config",
                                         config, "--json", "--no-baseline"});
  INFO(r.out.substr(0, 4000) << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(j["changed_paths"] == json::array({"ply/yacc.py"}));
  CHECK(j["planner"]["loop"]["turns"] == 4);
  CHECK(j["planner"]["loop"]["stop_reason"] == "submitted");
  // yacc.py (137 KB) was not in the prompt: the context budget cut it, the tools read it.
  const std::vector<std::string> log = stub.request_log();
  REQUIRE(log.size() == 4);
  CHECK(log[0].find("=== ply/yacc.py (editable) ===") == std::string::npos);
  CliResult show = run_cli({state.path()}, {"task", "show", j["planner"]["task_id"].get<std::string>()});
  CHECK(show.out.find("cut:        ply/yacc.py (over_budget)") != std::string::npos);
  WARN("PLY through the tool loop: " << j["planner"]["loop"].dump() << "; usage " << j["usage"].dump() << "; timings "
                                     << j["timings"].dump());
}

TEST_CASE("a real project in a session: PLY's bug worked to a proven fix inside a capped working copy", "[real][session]") {
  PlyRepo ply;
  TempDir work, state;
  const CliEnv env{state.path()};
  const CliResult opened = run_cli(env, {"session", "open", "--config", ply.config(work), "--json"}, 300);
  INFO(opened.err);
  REQUIRE(opened.exit_code == 0);
  const json rec = json_out(opened);
  const std::string id = rec.at("session_id").get<std::string>();
  CHECK(rec.at("disk_bytes").get<long long>() == 2048LL * 1024 * 1024);
  const auto exec = [&](const std::string& command) {
    const CliResult r = run_cli(env, {"session", "exec", id, "--json", "--", command}, 300);
    INFO(r.err);
    REQUIRE((r.exit_code == 0 || r.exit_code == 1));
    return json_out(r);
  };
  const json failing = exec("cd test && python3 testyacc.py");
  CHECK(failing["exit_code"] == 1);
  CHECK(failing["output"].get<std::string>().find("FAILED") != std::string::npos);
  // The session's shell stays in test/ (a live session carries cd over, as a terminal does).
  CHECK(exec("sed -i 's/return self.slice\\[n - 1\\].value/return self.slice[n].value/' ../ply/yacc.py")["exit_code"] == 0);
  const json passing = exec("python3 testyacc.py");
  CHECK(passing["exit_code"] == 0);
  const CliResult diff = run_cli(env, {"session", "diff", id}, 120);
  INFO(diff.err);
  CHECK(diff.exit_code == 0);
  CHECK(diff.out.find("-" + kBug) != std::string::npos);
  CHECK(diff.out.find("+" + kRight) != std::string::npos);
  const CliResult proved = run_cli(env, {"session", "prove", id, "--json"}, 600);
  INFO(proved.err);
  CHECK(proved.exit_code == 0);
  CHECK(json_out(proved).at("tests_passed") == true);
  CHECK(read_file(ply.yacc_path()).find(kBug) != std::string::npos);  // the user's tree untouched
  CHECK(run_cli(env, {"session", "close", id}).exit_code == 0);
  CHECK(sh("podman ps -a --filter name=lazyagent-sandbox-" + id + " -q").empty());
}
