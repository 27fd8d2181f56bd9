// `lazyagent-oci eval` end to end: the real binary, real podman, real images.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

std::string task_line(const std::string& id, const std::string& patch_field, const std::string& extra = "") {
  return "{\"id\":\"" + id + "\",\"seed\":\"" + seed_dir() + "\",\"patch\":" + patch_field + extra + "}\n";
}

std::string quoted(const std::string& s) { return json(s).dump(); }

std::vector<std::string> ids_of(const json& group) { return group["ids"].get<std::vector<std::string>>(); }

long long mtime_ns(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

struct Spawned {
  CliResult result;
  pid_t pid = 0;
};

Spawned eval_cli(const CliEnv& env, const std::vector<std::string>& args) {
  TempDir io;
  Spawned s;
  s.pid = spawn_cli(env, args, io.path());
  s.result.exit_code = wait_cli(s.pid, 600);
  s.result.out = read_file(io.path() + "/stdout");
  s.result.err = read_file(io.path() + "/stderr");
  return s;
}

}  // namespace

TEST_CASE("eval: a mixed task file gives each category, and a rerun skips the finished tasks", "[eval]") {
  TempDir state, dir;
  dir.file("fix.json", fixing_patch());
  dir.file("wrong.json", wrong_patch());
  dir.file("traversal.json", read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/examples/patches/traversal.json"));
  // (A seed that cannot be read is the user's input, refused with the task
  // file before anything runs: records_test.cpp.)
  const std::string tasks = dir.file(
      "tasks.jsonl",
      task_line("fix-inline", fixing_patch()) + task_line("fix-file", quoted("fix.json")) +
          task_line("wrong", quoted("wrong.json")) + task_line("refused", quoted("traversal.json")) +
          task_line("no-image", quoted("fix.json"), ",\"image\":\"localhost/lazyagent-no-such-image:eval-it\""));
  const std::string out = dir.path() + "/out";
  // Every verdict signed (docs/signing.md): a refusal and an infrastructure error are none.
  const json keys = json_out(run_cli({state.path()}, {"keygen", "--out", dir.path() + "/keys", "--json"}));

  Spawned first = eval_cli({state.path()}, {"eval", tasks, "--jobs", "2", "--out", out, "--rerun", "1", "--json",
                                            "--sign-key", keys["private_key"].get<std::string>()});
  INFO(first.result.err);
  CHECK(first.result.exit_code == 5);  // an infrastructure error among the tasks
  const json s = json::parse(first.result.out);
  CHECK(s["total"] == 5);
  CHECK(ids_of(s["passed"]) == std::vector<std::string>{"fix-inline", "fix-file"});
  CHECK(ids_of(s["failed"]) == std::vector<std::string>{"wrong"});
  CHECK(ids_of(s["refused"]) == std::vector<std::string>{"refused"});
  CHECK(ids_of(s["infra_error"]) == std::vector<std::string>{"no-image"});
  CHECK(s["flaky"]["count"] == 0);
  CHECK(s["skipped"]["count"] == 0);
  CHECK(s["interrupted"] == false);
  CHECK(json::parse(read_file(out + "/summary.json"))["passed"] == s["passed"]);
  // Every container it made is gone.
  CHECK(containers_with_label("io.lazyagent.pid=" + std::to_string(first.pid)).empty());

  // Result files: the JSON of `test --json`, plus the eval's fields.
  const json fix = json::parse(read_file(out + "/results/fix-inline.json"));
  CHECK(fix["tests_passed"] == true);
  CHECK(fix["test_exit_code"] == 0);
  CHECK(fix["changed_paths"] == json{"calculator.py"});
  CHECK(fix["sandbox_id"].get<std::string>().size() == 64);
  CHECK(fix["eval"]["category"] == "passed");
  CHECK(fix["eval"]["attempts"].size() == 1);
  // Judged against the unpatched seed (triage_run.h): the test the patch fixes is named.
  CHECK(fix["triage"]["verdict"] == "passed");
  CHECK_FALSE(fix["triage"]["fixed"].empty());
  const json wrong = json::parse(read_file(out + "/results/wrong.json"));
  CHECK(wrong["tests_passed"] == false);
  CHECK(wrong["eval"]["attempts"].size() == 2);  // --rerun 1: run again, failed again
  CHECK(wrong["eval"]["attempts"][0]["run_id"] != wrong["eval"]["attempts"][1]["run_id"]);
  const json refused = json::parse(read_file(out + "/results/refused.json"));
  CHECK(refused["findings"][0]["code"] == "dot_component");
  CHECK(refused["eval"]["attempts"].size() == 1);
  const json no_image = json::parse(read_file(out + "/results/no-image.json"));
  CHECK(no_image["error_kind"] == "engine");
  CHECK(no_image["error"].get<std::string>().find("lazyagent-no-such-image") != std::string::npos);
  CHECK(no_image["eval"]["attempts"].size() == 2);  // retried once
  CHECK(fix["attestation"]["keyid"] == keys["keyid"]);
  CHECK(wrong["attestation"]["keyid"] == keys["keyid"]);
  CHECK_FALSE(refused.contains("attestation"));
  CHECK_FALSE(no_image.contains("attestation"));
  CHECK(s["attestations"]["count"] == 3);
  CHECK(s["attestations"]["files"]["wrong"] == wrong["attestation"]["path"]);
  const CliResult checked = run_cli({state.path()}, {"verify", "--key", keys["public_key"].get<std::string>(), wrong["attestation"]["path"].get<std::string>(),
                                                     "--patch", dir.path() + "/wrong.json", "--json"});
  CHECK(checked.exit_code == 0);
  CHECK(json_out(checked)["result"] == "FAILED");

  // Rerun with the same --out: the four verdicts are kept (files untouched),
  // the infrastructure error runs again.
  std::map<std::string, long long> before;
  for (const char* id : {"fix-inline", "fix-file", "wrong", "refused", "no-image"}) {
    before[id] = mtime_ns(out + "/results/" + id + ".json");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string swebench = dir.path() + "/swebench.json";
  Spawned second = eval_cli({state.path()}, {"eval", tasks, "--jobs", "2", "--out", out, "--rerun", "1", "--json",
                                             "--report", "swebench:" + swebench});
  INFO(second.result.err);
  CHECK(second.result.exit_code == 5);
  // The SWE-bench-style report covers the resumed tasks too, from their result files.
  const json sb = json::parse(read_file(swebench));
  CHECK(sb["total_instances"] == 5);
  CHECK(sb["resolved_ids"] == json({"fix-inline", "fix-file"}));
  CHECK(sb["unresolved_ids"] == json({"wrong", "refused"}));
  CHECK(sb["error_ids"] == json({"no-image"}));
  const json& fixed_inst = sb["instances"]["fix-inline"];
  CHECK(fixed_inst["resolved"] == true);
  CHECK(fixed_inst["triage_available"] == true);
  CHECK(fixed_inst["tests_status"]["FAIL_TO_PASS"]["success"] == fix["triage"]["fixed"]);
  CHECK(fixed_inst["tests_status"]["FAIL_TO_PASS"]["failure"] == json::array());
  CHECK(fixed_inst["tests_status"]["PASS_TO_PASS"]["success"] == fix["triage"]["passing"]);
  CHECK_FALSE(fixed_inst["tests_status"]["PASS_TO_PASS"]["success"].empty());
  CHECK(sb["instances"]["wrong"]["resolved"] == false);
  CHECK(sb["instances"]["wrong"]["patch_successfully_applied"] == true);
  CHECK(sb["instances"]["refused"]["patch_successfully_applied"] == false);
  // The signed verdicts, resumed tasks' too, from their result files.
  CHECK(sb["attestation_files"] == json{{"fix-inline", fix["attestation"]["path"]},
                                        {"fix-file", json::parse(read_file(out + "/results/fix-file.json"))["attestation"]["path"]},
                                        {"wrong", wrong["attestation"]["path"]}});
  CHECK(second.result.err.find("eval: SWE-bench report: " + swebench) != std::string::npos);
  // A --report that is not swebench:PATH is a usage error, before anything runs.
  Spawned bad_report = eval_cli({state.path()}, {"eval", tasks, "--out", out, "--report", "junit:x.xml"});
  CHECK(bad_report.result.exit_code == 2);
  CHECK(bad_report.result.err.find("--report: expected swebench:PATH or html:PATH, got 'junit:x.xml'") != std::string::npos);
  const json s2 = json::parse(second.result.out);
  CHECK(ids_of(s2["skipped"]) == std::vector<std::string>{"fix-inline", "fix-file", "wrong", "refused"});
  CHECK(ids_of(s2["passed"]) == std::vector<std::string>{"fix-inline", "fix-file"});
  CHECK(s2["infra_error"]["count"] == 1);
  for (const char* id : {"fix-inline", "fix-file", "wrong", "refused"}) {
    CHECK(mtime_ns(out + "/results/" + id + ".json") == before[id]);
  }
  CHECK(mtime_ns(out + "/results/no-image.json") != before["no-image"]);
  CHECK(second.result.err.find("eval: [1/5] fix-inline: skipped (passed in an earlier run)") != std::string::npos);

  // A changed task under the same id is not skipped.
  const std::string changed = dir.file("changed.jsonl", task_line("fix-inline", quoted("wrong.json")));
  Spawned third = eval_cli({state.path()}, {"eval", changed, "--out", out, "--json"});
  CHECK(third.result.exit_code == 0);
  const json s3 = json::parse(third.result.out);
  CHECK(s3["skipped"]["count"] == 0);
  CHECK(ids_of(s3["failed"]) == std::vector<std::string>{"fix-inline"});
  CHECK(ids_of(s3["changed"]["patch"]) == std::vector<std::string>{"fix-inline"});
}

TEST_CASE("eval: SIGINT or SIGTERM mid-eval removes every container, and a rerun finishes the rest", "[eval]") {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir state, dir;
    // Each task passes after two seconds, so the eval is surely mid-way.
    const std::string slow = dir.file("slow.json", attack_patch("import time\ntime.sleep(2)"));
    std::string lines;
    for (int i = 0; i < 6; ++i) lines += task_line("slow-" + std::to_string(i), quoted("slow.json"));
    const std::string tasks = dir.file("tasks.jsonl", lines);
    const std::string out = dir.path() + "/out";
    TempDir io;
    const pid_t pid = spawn_cli({state.path()}, {"eval", tasks, "--jobs", "2", "--out", out, "--json"}, io.path());
    const std::string label = "io.lazyagent.pid=" + std::to_string(pid);
    bool running = false;
    for (int i = 0; i < 1200 && !running; ++i) {
      running = entries_in(out + "/results") >= 1 &&
                !sh("podman ps --filter label=" + label + " --filter status=running --format '{{.ID}}'").empty();
      if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(running);
    if (sig == SIGINT) {  // a second eval on the same --out is refused while this one runs
      CliResult twice = run_cli({state.path()}, {"eval", tasks, "--out", out});
      CHECK(twice.exit_code == 2);
      CHECK(twice.err.find("lazyagent-oci: eval: another eval is using " + out + " (Resource temporarily unavailable)") != std::string::npos);
    }
    kill(pid, sig);
    CHECK(wait_cli(pid, 60) == 128 + sig);
    CHECK(containers_with_label(label).empty());
    CHECK(entries_in(state.path() + "/lazyagent-oci/work") == 0);
    const json s = json::parse(read_file(io.path() + "/stdout"));
    CHECK(s["interrupted"] == true);
    const std::size_t done = entries_in(out + "/results");
    CHECK(done >= 1);
    CHECK(done < 6);
    CHECK(s["not_run"]["count"] == 6 - done);
    CHECK(read_file(io.path() + "/stderr").find("rerun with the same --out to finish") != std::string::npos);

    CliResult rerun = run_cli({state.path()}, {"eval", tasks, "--jobs", "2", "--out", out, "--json"});
    INFO(rerun.err);
    CHECK(rerun.exit_code == 0);
    const json s2 = json::parse(rerun.out);
    CHECK(s2["passed"]["count"] == 6);
    CHECK(s2["skipped"]["count"] == done);
    CHECK(entries_in(out + "/results") == 6);
  }
}

TEST_CASE("eval: a task file with bad lines is refused whole, each line named", "[eval][quick]") {
  TempDir state, dir;
  const std::string tasks = dir.file(
      "tasks.jsonl", task_line("good", quoted("fix.json")) + "{\"id\":\"x\",\"sed\":\"s\",\"patch\":{}}\n" +
                         "not json\n" + task_line("good", fixing_patch()) + "{\"id\":\"y\"}\n");
  dir.file("fix.json", fixing_patch());
  const std::string out = dir.path() + "/out";
  CliResult r = run_cli({state.path()}, {"eval", tasks, "--out", out});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lazyagent-oci: eval: " + tasks + ": 4 problem(s); nothing was run:\n"
                 "  line 2: unknown_key: unknown key 'sed' (keys: id, seed, allow, test_command, image, patch, diff, instruction)\n"
                 "  line 3: malformed_json: not JSON: unexpected character 'n' at line 1, column 1\n"
                 "  line 4: duplicate_id: id 'good' is already used on line 1\n"
                 "  line 5: no_patch_or_instruction: a task needs 'patch' (an object or a file), 'diff' (a unified diff) or 'instruction'\n");
  CHECK_FALSE(fs::exists(out));  // nothing half-run

  CliResult j = run_cli({state.path()}, {"eval", tasks, "--out", out, "--json"});
  CHECK(j.exit_code == 2);
  const json e = json::parse(j.out);
  REQUIRE(e["line_errors"].size() == 4);
  CHECK(e["line_errors"][2] == json{{"line", 4}, {"code", "duplicate_id"}, {"message", "id 'good' is already used on line 1"}});

  CliResult missing = run_cli({state.path()}, {"eval", dir.path() + "/nope.jsonl"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "lazyagent-oci: eval: cannot open the task file " + dir.path() + "/nope.jsonl\n");

  CliResult help = run_cli({state.path()}, {"eval", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--jobs N") != std::string::npos);

  CliResult backend = run_cli({state.path()}, {"eval", tasks, "--backend", "docker"});
  CHECK(backend.exit_code == 2);
  CHECK(backend.err == "lazyagent-oci: eval: --backend must be podman or k8s, got 'docker'\n");
  CliResult ns = run_cli({state.path()}, {"eval", tasks, "--namespace", "lz"});
  CHECK(ns.exit_code == 2);
  CHECK(ns.err == "lazyagent-oci: eval: --namespace and --kubeconfig need --backend k8s\n");
  // gVisor's sandboxes have their own podman service: eval says so instead of
  // failing every task at verification.
  const std::string cfg = dir.file("runsc.yaml", "engine:\n  runtime: runsc\n");
  CliResult runsc = run_cli({state.path()}, {"eval", tasks, "--config", cfg});
  CHECK(runsc.exit_code == 2);
  CHECK(runsc.err.find("eval runs its sandboxes on the podman service's own runtime, runc or crun, only") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("eval: instruction tasks go through the planner, patch tasks beside them", "[eval]") {
  // The project's scripted provider in this process, and podman secrets
  // (unique names) pointing the planner at it; all removed at the end.
  const std::string key = "sk-lazyagent-eval-it-0123456789abcdef";
  lazyagent::StubScript script;
  script.api_key = key;
  lazyagent::StubReply wrong, fix;
  wrong.match = "[wrong]";
  wrong.content = json::parse(wrong_patch()).dump();
  fix.content = json::parse(fixing_patch()).dump();
  script.replies = {wrong, fix};
  PodmanProvider provider(script, key, 0);
  TempDir dir;
  const TempDir& state = provider.state;
  const std::string config = provider.config();

  const std::string tasks = dir.file("tasks.jsonl",
                                     "{\"id\":\"ask-fix\",\"instruction\":\"Fix calculator.add.\"}\n"
                                     "{\"id\":\"ask-wrong\",\"instruction\":\"[wrong] Fix calculator.add.\"}\n" +
                                         task_line("patch-fix", fixing_patch()));
  const std::string out = dir.path() + "/out";
  Spawned r = eval_cli({state.path()}, {"eval", tasks, "--config", config, "--jobs", "2", "--out", out, "--json"});
  INFO(r.result.err);
  CHECK(r.result.exit_code == 0);
  const json s = json::parse(r.result.out);
  CHECK(ids_of(s["passed"]) == std::vector<std::string>{"ask-fix", "patch-fix"});
  CHECK(ids_of(s["failed"]) == std::vector<std::string>{"ask-wrong"});
  const json ask = json::parse(read_file(out + "/results/ask-fix.json"));
  CHECK(ask["tests_passed"] == true);
  CHECK(ask["planner_task_id"].get<std::string>().rfind("t-", 0) == 0);
  CHECK(ask["usage"].is_object());
  CHECK(containers_with_label("io.lazyagent.pid=" + std::to_string(r.pid)).empty());
  for (const char* f : {"ask-fix", "ask-wrong", "patch-fix"}) {
    CHECK(read_file(out + "/results/" + f + ".json").find(key) == std::string::npos);
  }
  CHECK(r.result.err.find(key) == std::string::npos);
}

TEST_CASE("eval: with engine.warm the workers make spares between tasks and the next tasks claim them", "[eval][warm]") {
  TempDir state, dir;
  std::string config = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  const auto at = config.find("\nengine:\n");
  REQUIRE(at != std::string::npos);
  config.insert(at + 9, "  warm: 1\n");
  const std::string config_path = dir.file("warm.yaml", config);
  dir.file("fix.json", fixing_patch());
  std::string lines;
  for (int i = 0; i < 4; ++i) lines += task_line("fix-" + std::to_string(i), quoted("fix.json"));
  const std::string tasks = dir.file("tasks.jsonl", lines);
  const std::string out = dir.path() + "/out";
  Spawned r = eval_cli({state.path()}, {"eval", tasks, "--jobs", "1", "--prepare", "0", "--no-baseline", "--out", out,
                                        "--config", config_path, "--json"});
  INFO(r.result.err);
  CHECK(r.result.exit_code == 0);
  int warm = 0;
  for (int i = 0; i < 4; ++i) {
    const json t = json::parse(read_file(out + "/results/fix-" + std::to_string(i) + ".json"));
    CHECK(t["tests_passed"] == true);
    if (t.contains("warm")) ++warm;
  }
  // The first task had no spare; each later one found the one made after the task before it.
  CHECK(warm == 3);
  const json reaped = json::parse(run_cli({state.path()}, {"reap", "--json"}).out);
  CHECK(reaped["errors"].empty());
  const json listed = json::parse(run_cli({state.path()}, {"sandboxes", "1", "--json"}).out);
  CHECK(listed["spares"].empty());
}
