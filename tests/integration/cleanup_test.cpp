// Cleanup on every path: signals to the CLI, and kill -9 followed by reaping.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

// Starts `test` with a patch that hangs, and waits until its sandbox runs.
struct HangingRun {
  TempDir io;
  pid_t pid = 0;
  std::string label;

  HangingRun(const CliEnv& env) {
    const std::string p = io.file("patch.json", attack_patch("import time\ntime.sleep(3600)"));
    pid = spawn_cli(env, {"test", "--seed", seed_dir(), "--patch", p, "--timeout", "120", "--json"}, io.path());
    label = "io.lazyagent.pid=" + std::to_string(pid);
  }

  bool wait_until_running(int timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string state = sh("podman ps --filter label=" + label + " --filter status=running --format '{{.ID}}'");
      if (!state.empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

std::size_t work_dirs(const std::string& state) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state + "/lazyagent-oci/work", ec)) {
    (void)e;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("SIGINT and SIGTERM to the CLI remove the running sandbox", "[cleanup][quick]") {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir state;
    HangingRun run({state.path()});
    REQUIRE(run.wait_until_running(60));
    kill(run.pid, sig);
    const int code = wait_cli(run.pid, 30);
    CHECK(code == 128 + sig);
    CHECK(containers_with_label(run.label).empty());
    CHECK(work_dirs(state.path()) == 0);
  }
}

TEST_CASE("a CLI killed with SIGKILL leaves a container that the next start reaps", "[cleanup]") {
  TempDir state;
  HangingRun run({state.path()});
  REQUIRE(run.wait_until_running(60));
  kill(run.pid, SIGKILL);
  CHECK(wait_cli(run.pid, 10) == 128 + SIGKILL);
  REQUIRE(containers_with_label(run.label).size() == 1);  // the crash really left it
  CHECK(work_dirs(state.path()) == 1);
  // Its sandbox's own cgroup (resources, engine/podman/cgroup_usage.h) is there too.
  std::string run_id;
  for (const auto& e : std::filesystem::directory_iterator(state.path() + "/lazyagent-oci/work")) run_id = e.path().filename();
  const std::string cgroup = "/sys/fs/cgroup/memory/lazyagent/" + run_id;
  CHECK(std::filesystem::exists(cgroup));

  // `sandboxes` shows it as still existing.
  json rows = json::parse(run_cli({state.path()}, {"sandboxes", "--json"}).out)["sandboxes"];
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["exists"] == true);
  CHECK(rows[0]["status"] == "running");

  // The next start reaps it before doing its own work.
  TempDir d;
  CliResult next = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", d.file("p.json", fixing_patch()), "--json"});
  CHECK(next.exit_code == 0);
  INFO(next.err);
  CHECK(next.err.find("reaped 1 container(s) left by crashed runs") != std::string::npos);
  CHECK(containers_with_label(run.label).empty());
  CHECK(work_dirs(state.path()) == 0);
  CHECK_FALSE(std::filesystem::exists(cgroup));
}

TEST_CASE("reap removes a crashed run's container but not a live run's", "[cleanup]") {
  TempDir state;
  HangingRun live({state.path()});
  REQUIRE(live.wait_until_running(60));
  HangingRun crashed({state.path()});  // starts after `live`, so nothing reaps it early
  REQUIRE(crashed.wait_until_running(60));
  kill(crashed.pid, SIGKILL);
  wait_cli(crashed.pid, 10);
  const auto crashed_ids = containers_with_label(crashed.label);
  const auto live_ids = containers_with_label(live.label);
  REQUIRE(crashed_ids.size() == 1);
  REQUIRE(live_ids.size() == 1);

  CliResult reap = run_cli({state.path()}, {"reap", "--json"});
  CHECK(reap.exit_code == 0);
  json j = json::parse(reap.out);
  // The service is shared with other tests: count only this test's two
  // containers ("name (id...)" entries) in what reap says.
  const auto mentions = [](const json& list, const std::string& short_id) {
    std::size_t n = 0;
    for (const auto& e : list) n += e.get<std::string>().find(short_id.substr(0, 12)) != std::string::npos;
    return n;
  };
  CHECK(mentions(j["removed"], crashed_ids[0]) == 1);
  CHECK(mentions(j["left_running"], crashed_ids[0]) == 0);
  CHECK(mentions(j["left_running"], live_ids[0]) == 1);
  CHECK(mentions(j["removed"], live_ids[0]) == 0);
  CHECK(j["work_dirs_removed"].size() == 1);  // this test's own run store
  CHECK(containers_with_label(crashed.label).empty());
  CHECK(containers_with_label(live.label).size() == 1);

  kill(live.pid, SIGTERM);
  CHECK(wait_cli(live.pid, 30) == 128 + SIGTERM);
  CHECK(containers_with_label(live.label).empty());
}
