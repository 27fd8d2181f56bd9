// Chaos: the podman service goes away under a running eval (issue 44). Its
// tasks must not turn into infra_errors: the eval waits the outage out, runs
// what it cut short again from the start and ends with every verdict right;
// an outage longer than eval.engine_wait_seconds stops it with the tasks not
// run as not_run, which a resume then runs, exactly those.
//
// The outage is a private podman service (private_podman.h) stopped by its
// pid and started again, as a package upgrade, a crash or an out-of-memory
// kill would; the shared service is never touched. Each task's tests sleep
// 2 s, so that the outage meets sandboxes in flight.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "attack_common.h"
#include "private_podman.h"
#include "test_paths.h"

using nlohmann::json;
using namespace it;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// `n` tasks on the demo seed, fixing (even) and wrong (odd) in turn, each
// test run sleeping 2 s at import; ids fix-N / wrong-N.
std::string slow_tasks(const TempDir& dir, int n) {
  const std::string sleep = "import time\ntime.sleep(2)";
  const json wrong = json::parse(wrong_patch());
  json slow_wrong = wrong;
  slow_wrong["files"][0]["content"] = sleep + "\n" + wrong["files"][0]["content"].get<std::string>();
  std::string lines;
  for (int i = 0; i < n; ++i) {
    const bool fix = i % 2 == 0;
    const json patch = fix ? json::parse(attack_patch(sleep)) : slow_wrong;
    lines += json{{"id", (fix ? "fix-" : "wrong-") + std::to_string(i)}, {"seed", seed_dir()}, {"patch", patch}}.dump() + "\n";
  }
  return dir.file("tasks.jsonl", lines);
}

std::vector<std::string> ids(const json& group) { return group["ids"].get<std::vector<std::string>>(); }

// Each task id of the summary where its verdict must be: fix-* passed, wrong-* failed.
std::string wrong_verdicts(const json& s) {
  std::string bad;
  for (const char* c : {"passed", "failed", "refused", "infra_error", "flaky", "isolation_violation"}) {
    for (const auto& id : ids(s[c])) {
      const bool ok = (std::string(c) == "passed" && id.rfind("fix-", 0) == 0) ||
                      (std::string(c) == "failed" && id.rfind("wrong-", 0) == 0);
      if (!ok) bad += id + " is " + c + "; ";
    }
  }
  return bad;
}

json result_of(const std::string& out, const std::string& id) {
  std::ifstream f(out + "/results/" + id + ".json");
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

bool sandbox_running(const std::string& label) {
  return !sh("podman ps --filter label=" + label + " --filter status=running --format '{{.ID}}'").empty();
}

long ms_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

TEST_CASE("chaos: eval waits out a podman restart mid-run: every verdict right, no infra_error, no resume",
          "[chaos]") {
  PrivatePodman podman;
  TempDir state, dir, io;
  const std::string tasks = slow_tasks(dir, 8);
  const std::string out = dir.path() + "/out";
  CliEnv env{state.path(), {{"CONTAINER_HOST", podman.container_host()}}};
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = spawn_cli(env, {"eval", tasks, "--jobs", "2", "--out", out, "--json", "--events", "jsonl"}, io.path());
  const std::string label = "io.lazyagent.pid=" + std::to_string(pid);
  // The outage begins while sandboxes run their tests: 3 s without the service.
  REQUIRE(wait_for([&] { return sandbox_running(label); }, 120));
  const long outage_at_ms = ms_since(t0);
  podman.stop(SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  podman.start();
  const int code = wait_cli(pid, 300);
  const long wall_ms = ms_since(t0);
  const std::string stdout_text = read_file(io.path() + "/stdout");
  const std::string events = read_file(io.path() + "/stderr");
  INFO(stdout_text << "\n" << events.substr(events.size() > 6000 ? events.size() - 6000 : 0));
  CHECK(code == 0);
  const json s = json::parse(stdout_text, nullptr, false);
  REQUIRE(s.is_object());
  CHECK(wrong_verdicts(s).empty());
  CHECK(s["passed"]["count"] == 4);
  CHECK(s["failed"]["count"] == 4);
  CHECK(s["infra_error"]["count"] == 0);
  CHECK(s["not_run"]["count"] == 0);
  CHECK(s["skipped"]["count"] == 0);
  REQUIRE(s["engine_outages"].size() >= 1);
  CHECK(s["engine_outages"][0]["gave_up"] == false);

  // The outage really cut tasks short (else this test proves nothing): each
  // ran again from the start, its cut-short run kept as its record.
  std::vector<std::string> cut;
  for (const auto& e : fs::directory_iterator(out + "/results")) {
    const std::string id = e.path().stem().string();
    const json r = result_of(out, id);
    REQUIRE(r.is_object());
    if (!r["eval"]["outages"].empty()) cut.push_back(id);
    CHECK(r["eval"]["attempts"].size() == 1);  // an outage is neither an attempt nor a retry
  }
  CHECK(!cut.empty());

  // The events say so once as it began and once as it ended.
  std::size_t unreachable = 0, back = 0;
  std::string began_text;
  std::istringstream lines(events);
  for (std::string line; std::getline(lines, line);) {
    const json ev = json::parse(line, nullptr, false);
    if (!ev.is_object()) continue;
    if (ev["event"] == "engine_unreachable") {
      ++unreachable;
      began_text = ev.value("text", "");
      CHECK(ev.value("since", "").size() == 8);  // HH:MM:SS
    }
    back += ev["event"] == "engine_back";
  }
  CHECK(unreachable >= 1);
  CHECK(back == unreachable);
  CHECK(has(began_text, ", waiting (up to 600 s, eval.engine_wait_seconds): "));
  CHECK(has(began_text, "engine unreachable since "));

  // Nothing left: the sandboxes that outlived the restart were removed once it answered.
  CHECK(containers_with_label(label).empty());
  CHECK(entries_in(state.path() + "/lazyagent-oci/work") == 0);
  evidence("eval of 8 tasks (4 fixing, 4 wrong, 2 s each, --jobs 2), the podman service stopped " +
           std::to_string(outage_at_ms) + " ms in for 3 s and started again: exit " + std::to_string(code) +
           ", passed " + s["passed"]["count"].dump() + ", failed " + s["failed"]["count"].dump() + ", infra_error " +
           s["infra_error"]["count"].dump() + ", " + std::to_string(cut.size()) +
           " task(s) cut short and run again from the start, outage " + s["engine_outages"][0]["ms"].dump() +
           " ms as the eval saw it, wall " + std::to_string(wall_ms) + " ms; first line: " + began_text);
}

TEST_CASE("chaos: eval gives up on a podman service that stays away: not_run, then a resume started while it is "
          "still away waits for it and runs exactly those", "[chaos]") {
  PrivatePodman podman;
  TempDir state, dir, io;
  const std::string tasks = slow_tasks(dir, 6);
  const std::string out = dir.path() + "/out";
  const std::string config =
      dir.file("lazyagent.yaml", read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml") +
                                     "\neval:\n  engine_wait_seconds: 3\n");
  CliEnv env{state.path(), {{"CONTAINER_HOST", podman.container_host()}}};
  const pid_t pid = spawn_cli(env, {"eval", tasks, "--jobs", "2", "--out", out, "--config", config, "--json"}, io.path());
  REQUIRE(wait_for([&] { return sandbox_running("io.lazyagent.pid=" + std::to_string(pid)); }, 120));
  const auto stopped = std::chrono::steady_clock::now();
  podman.stop(SIGTERM);
  const int code = wait_cli(pid, 120);
  const long gave_up_after_ms = ms_since(stopped);
  const std::string err = read_file(io.path() + "/stderr");
  INFO(err);
  CHECK(code == 5);
  CHECK(gave_up_after_ms < 3000 + 8000);  // the wait, then at most one check's backoff and the way out
  const json s = json::parse(read_file(io.path() + "/stdout"), nullptr, false);
  REQUIRE(s.is_object());
  CHECK(wrong_verdicts(s).empty());
  CHECK(s["infra_error"]["count"] == 0);
  const std::vector<std::string> not_run = ids(s["not_run"]);
  REQUIRE_FALSE(not_run.empty());
  CHECK(s["passed"]["count"].get<std::size_t>() + s["failed"]["count"].get<std::size_t>() + not_run.size() == 6);
  REQUIRE(s["engine_outages"].size() == 1);
  CHECK(s["engine_outages"][0]["gave_up"] == true);
  CHECK(has(err, "eval: engine unreachable since "));
  CHECK(has(err, "gave up after "));
  CHECK(has(err, "eval stopped: the engine stayed unreachable for more than 3 s (eval.engine_wait_seconds); " +
                     std::to_string(not_run.size()) + " task(s) not run; rerun with the same --out once it answers"));
  for (const auto& id : not_run) CHECK_FALSE(fs::exists(out + "/results/" + id + ".json"));  // no half verdict

  // The resume starts while the service is still away: it waits for it (as
  // one that goes away mid-run), then runs the not_run tasks, and only them.
  const std::string patient =
      dir.file("patient.yaml", read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml") +
                                   "\neval:\n  engine_wait_seconds: 60\n");
  TempDir io2;
  const pid_t again_pid = spawn_cli(env, {"eval", tasks, "--jobs", "2", "--out", out, "--config", patient, "--json"}, io2.path());
  const bool waiting = wait_for([&] { return has(read_file(io2.path() + "/stderr"), "eval: engine unreachable since "); }, 30);
  podman.start();
  const int again_code = wait_cli(again_pid, 300);
  const std::string err2 = read_file(io2.path() + "/stderr");
  INFO(err2);
  CHECK(waiting);
  CHECK(has(err2, ", waiting (up to 60 s, eval.engine_wait_seconds): "));
  CHECK(has(err2, "engine answers again after "));
  CHECK(again_code == 0);
  const json s2 = json::parse(read_file(io2.path() + "/stdout"), nullptr, false);
  REQUIRE(s2.is_object());
  REQUIRE(s2["engine_outages"].size() == 1);
  CHECK(s2["engine_outages"][0]["gave_up"] == false);
  CHECK(wrong_verdicts(s2).empty());
  CHECK(s2["passed"]["count"] == 3);
  CHECK(s2["failed"]["count"] == 3);
  CHECK(s2["not_run"]["count"] == 0);
  std::set<std::string> ran;
  for (const char* c : {"passed", "failed"}) {
    for (const auto& id : ids(s2[c])) ran.insert(id);
  }
  for (const auto& id : ids(s2["skipped"])) ran.erase(id);
  CHECK(ran == std::set<std::string>(not_run.begin(), not_run.end()));
  // What the first eval's cut-short sandbox left was reaped by the resume (its owner is gone).
  CHECK(containers_with_label("io.lazyagent.pid=" + std::to_string(pid)).empty());
  CHECK(containers_with_label("io.lazyagent.pid=" + std::to_string(again_pid)).empty());
  evidence("eval of 6 tasks, the podman service stopped for good mid-run with eval.engine_wait_seconds 3: exit " +
           std::to_string(code) + " " + std::to_string(gave_up_after_ms) + " ms after the stop, " +
           std::to_string(not_run.size()) + " not_run, 0 infra_error; the resume, started while it was away, waited " +
           s2["engine_outages"][0]["ms"].dump() + " ms for it and ran exactly those (exit " +
           std::to_string(again_code) + ")");
}

TEST_CASE("chaos: a session's command meets a podman restart: it waits within its timeout, says so and finishes, "
          "past its timeout a retryable error, the session and its copy kept", "[chaos]") {
  PrivatePodman podman;
  TempDir state, io, cfg;
  CliEnv env{state.path(), {{"CONTAINER_HOST", podman.container_host()}}};
  // The per-command model: its command's own container meets the restart.
  const std::string config = cfg.file("c.yaml", "seed: " + seed_dir() + "\nsessions:\n  isolation: per-command\n");
  CliResult opened = run_cli(env, {"session", "open", "--config", config});
  INFO(opened.err);
  REQUIRE(opened.exit_code == 0);
  std::string id = opened.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  REQUIRE_FALSE(id.empty());
  // Command 2 writes a file, runs on while the service is away for 3 s, and
  // finishes after it is back: the same container, waited for again.
  const pid_t pid = spawn_cli(env, {"session", "exec", id, "--json", "--timeout", "60", "--",
                                    "echo kept > note && echo before && sleep 6 && echo after"},
                              io.path());
  const std::string name = "lazyagent-sandbox-" + id + "-2";
  const bool running =
      wait_for([&] { return !sh("podman ps --filter name=" + name + " --filter status=running -q").empty(); }, 60);
  INFO("session " << id << ": " << read_file(io.path() + "/stdout") << read_file(io.path() + "/stderr"));
  REQUIRE(running);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the echo has run
  const auto stopped = std::chrono::steady_clock::now();
  podman.stop(SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  podman.start();
  const long outage_ms = ms_since(stopped);
  const int code = wait_cli(pid, 90);
  const std::string err = read_file(io.path() + "/stderr");
  const json done = json::parse(read_file(io.path() + "/stdout"), nullptr, false);
  INFO(read_file(io.path() + "/stdout") << err);
  CHECK(code == 0);
  REQUIRE(done.is_object());
  CHECK(done["exit_code"] == 0);
  CHECK(done["exec_id"] == id + "-2");
  // Its whole output, each line once (the follow after the outage starts over).
  CHECK(done["output"] == "before\nafter\n");
  REQUIRE(done["engine_outages"].size() == 1);
  CHECK(done["engine_outages"][0]["gave_up"] == false);
  CHECK(done["engine_outages"][0]["ms"].get<long>() >= 2000);
  // It said so as the outage began and as it ended.
  CHECK(has(err, "podman unreachable since "));
  CHECK(has(err, ", waiting (up to 60 s, the command's timeout): "));
  CHECK(has(err, "podman answers again after "));
  // Removed once it finished, by a child after the answer (as every command's is).
  CHECK(wait_for([&] { return sh("podman container exists " + name + "; echo $?") == "1\n"; }, 30));

  // Away for longer than a command's timeout: a retryable error naming it, nothing ran.
  podman.stop(SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  CliResult away = run_cli(env, {"session", "exec", id, "--json", "--timeout", "2", "--", "echo ran >> note"});
  const long away_ms = ms_since(t0);
  INFO(away.out << away.err);
  CHECK(away.exit_code == 5);
  const json cut = json::parse(away.out, nullptr, false);
  REQUIRE(cut.is_object());
  CHECK(cut["error_kind"] == "engine_unreachable");
  CHECK(cut["retryable"] == true);
  CHECK(has(cut.value("error", ""), "session " + id + ": command " + id +
                                        "-3 not run, podman is unreachable (the session and its working copy are "
                                        "kept): retry once podman answers: "));
  CHECK(has(cut.value("error", ""), "podman stayed unreachable for more than 2 s (the command's timeout): "));
  CHECK(away_ms >= 2000);
  CHECK(away_ms < 2000 + 8000);  // its budget, then one check's backoff and the way out

  CHECK_FALSE(has(cut.value("error", ""), ", command " + id + "-3: "));  // said once

  // The next command starts while the service is still away: it waits, and
  // once the service is back it first removes what the cut-short one may
  // have left (by name), then runs. The copy has the file, written once.
  TempDir io3;
  const pid_t next_pid = spawn_cli(env, {"session", "exec", id, "--json", "--", "cat note"}, io3.path());
  const bool next_waits =
      wait_for([&] { return has(read_file(io3.path() + "/stderr"), "podman unreachable since "); }, 30);
  podman.start();
  const int next_code = wait_cli(next_pid, 60);
  const json next = json::parse(read_file(io3.path() + "/stdout"), nullptr, false);
  INFO(read_file(io3.path() + "/stderr"));
  CHECK(next_waits);
  CHECK(next_code == 0);
  CHECK(next.value("output", "") == "kept\n");
  CHECK(next.value("exec_id", "") == id + "-4");
  CHECK(run_cli(env, {"session", "close", id}).exit_code == 0);
  CHECK(sh("podman ps -a --filter name=lazyagent-sandbox-" + id + " -q").empty());
  evidence("session command with the podman service stopped " + std::to_string(outage_ms) +
           " ms under it: exit " + std::to_string(code) + " with its whole output, outage " +
           done["engine_outages"][0]["ms"].dump() + " ms as it saw it; away past a 2 s timeout: exit " +
           std::to_string(away.exit_code) + " after " + std::to_string(away_ms) + " ms: " + cut.value("error", ""));
}
