// Warm spares (warm_spares.h) against the real podman service: claimed once,
// never used across a change of policy or image, expired by the next start,
// nothing left after a kill between claim and start, shown by `sandboxes`
// and removed by `reap`.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "harness.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

// The repo's config with engine.warm and engine.warm_ttl_seconds set, and
// `replace` applied to its text (from -> to, once each).
std::string warm_config(int warm, int ttl, const std::vector<std::pair<std::string, std::string>>& replace = {}) {
  std::string text = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  const std::string at = "\nengine:\n";
  const auto pos = text.find(at);
  REQUIRE(pos != std::string::npos);
  text.insert(pos + at.size(), "  warm: " + std::to_string(warm) + "\n  warm_ttl_seconds: " + std::to_string(ttl) + "\n");
  for (const auto& [from, to] : replace) {
    const auto p = text.find(from);
    REQUIRE(p != std::string::npos);
    text.replace(p, from.size(), to);
  }
  return text;
}

// Waits for the refill a `test` started after its result (it holds the lock).
void wait_for_refill(const TempDir& state) {
  const std::string lock = state.path() + "/lazyagent-oci/refill.lock";
  if (fs::exists(lock)) sh("flock " + lock + " true");
}

json spares_of(const TempDir& state) {
  const json j = json_out(run_cli({state.path()}, {"sandboxes", "1", "--json"}));
  REQUIRE(j.contains("spares"));
  return j["spares"];
}

std::size_t spare_dirs(const TempDir& state) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state.path() + "/lazyagent-oci/work", ec)) {
    if (e.path().filename().string().rfind("spare-", 0) == 0) ++n;
  }
  return n;
}

// `reap` removes every spare of the store; nothing of ours is left after it.
void reap_and_check(const TempDir& state) {
  wait_for_refill(state);
  const json r = json_out(run_cli({state.path()}, {"reap", "--json"}));
  CHECK(r["errors"].empty());
  CHECK(spares_of(state).empty());
  CHECK(spare_dirs(state) == 0);
}

// The spare directories a store should hold: one per spare it lists.
std::size_t after_dirs_expected(const TempDir& state) { return spares_of(state).size(); }

CliResult make_spares(const TempDir& state, const std::string& config, int count) {
  CliResult r = run_cli({state.path()}, {"warm", "--seed", seed_dir(), "--config", config, "--count",
                                         std::to_string(count), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("warm: a spare is claimed once, the other of two concurrent runs makes its own", "[warm]") {
  TempDir state, io;
  const std::string config = io.file("warm.yaml", warm_config(1, 600));
  const json made = json_out(make_spares(state, config, 1));
  REQUIRE(made["made"].size() == 1);
  const json listed = spares_of(state);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["state"] == "initialized");
  CHECK(listed[0]["claimed"] == false);
  CHECK(spare_dirs(state) == 1);

  const std::string patch = io.file("fix.json", fixing_patch());
  TempDir out_a, out_b;
  const pid_t a = spawn_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--config", config, "--json"}, out_a.path());
  const pid_t b = spawn_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--config", config, "--json"}, out_b.path());
  CHECK(wait_cli(a, 300) == 0);
  CHECK(wait_cli(b, 300) == 0);
  const json ja = json::parse(read_file(out_a.path() + "/stdout"), nullptr, false);
  const json jb = json::parse(read_file(out_b.path() + "/stdout"), nullptr, false);
  INFO(read_file(out_a.path() + "/stderr") << "\n" << read_file(out_b.path() + "/stderr"));
  REQUIRE(ja.is_object());
  REQUIRE(jb.is_object());
  CHECK(ja["status"] == "passed");
  CHECK(jb["status"] == "passed");
  // Exactly one ran in the spare; the spare's name is gone, its container too.
  CHECK(ja.contains("warm") != jb.contains("warm"));
  const json& warm_run = ja.contains("warm") ? ja : jb;
  CHECK(warm_run["warm"]["spare"] == listed[0]["name"].get<std::string>().substr(std::string("lazyagent-spare-").size()));
  CHECK(warm_run["evidence"] == "driver");  // the spare's own nonce carried the runner's report
  CHECK(warm_run["isolation_probe"]["violations"].empty());
  // The used sandboxes are removed after the result, by the refill (or by
  // the run itself when another refill held the lock).
  CHECK(ja["removal"] == "deferred");
  CHECK(jb["removal"] == "deferred");

  // Each run started a refill after its result (one at a time): the store
  // holds a new spare, and `sandboxes` shows it; the used ones are gone.
  wait_for_refill(state);
  CHECK(container_gone(ja["sandbox_id"]));
  CHECK(container_gone(jb["sandbox_id"]));
  CHECK(spare_dirs(state) == after_dirs_expected(state));
  const json after = spares_of(state);
  CHECK(after.size() >= 1);
  for (const auto& s : after) CHECK(s["name"] != listed[0]["name"]);
  reap_and_check(state);
}

TEST_CASE("warm: a spare made for another policy or image is removed, never used", "[warm]") {
  TempDir state, io;
  const std::string patch = io.file("fix.json", fixing_patch());
  SECTION("policy") {
    const std::string before = io.file("a.yaml", warm_config(1, 600));
    const std::string after = io.file("b.yaml", warm_config(1, 600, {{"memory_mib: 512", "memory_mib: 640"}}));
    const std::string old_name = json_out(make_spares(state, before, 1))["made"][0];
    CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--config", after, "--json"});
    const json j = json_out(r);
    CHECK(j["status"] == "passed");
    CHECK_FALSE(j.contains("warm"));
    CHECK(r.err.find("warm: removed spare " + old_name) != std::string::npos);
    CHECK(containers_with_label("io.lazyagent.run=spare-" + old_name.substr(16)).empty());
  }
  SECTION("image") {
    // A tag of our own that first names the sandbox image, then an image
    // built from it with one more label (another digest).
    const std::string tag = "localhost/lazyagent-warmtest:" + std::to_string(::getpid());
    REQUIRE(sh("podman tag localhost/lazyagent-sandbox:latest " + tag + " && echo ok") == "ok\n");
    const std::string config = io.file("img.yaml", warm_config(1, 600, {{"sandbox: localhost/lazyagent-sandbox:latest",
                                                                          "sandbox: " + tag}}));
    const std::string old_name = json_out(make_spares(state, config, 1))["made"][0];
    io.file("Containerfile", "FROM " + tag + "\nLABEL io.lazyagent.warmtest=changed\n");
    const std::string built = sh("podman build -q --pull=never --label io.lazyagent.warmtest=changed -t " + tag + " " + io.path() + " 2>&1");
    INFO(built);
    CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--config", config, "--json"});
    const json j = json_out(r);
    CHECK(j["status"] == "passed");
    CHECK_FALSE(j.contains("warm"));
    CHECK(r.err.find("warm: removed spare " + old_name) != std::string::npos);
    CHECK(containers_with_label("io.lazyagent.run=spare-" + old_name.substr(16)).empty());
    reap_and_check(state);
    sh("podman rmi " + tag + " >/dev/null 2>&1; podman image prune -f --filter label=io.lazyagent.warmtest=changed >/dev/null 2>&1");
  }
  reap_and_check(state);
}

TEST_CASE("warm: a spare past its TTL is removed by the next start", "[warm]") {
  TempDir state, io;
  const json made = json_out(make_spares(state, io.file("short.yaml", warm_config(1, 10)), 1));
  const std::string name = made["made"][0];
  REQUIRE(spares_of(state).size() == 1);
  std::this_thread::sleep_for(std::chrono::seconds(11));
  // A run that keeps no spares: its start reaps the expired one.
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", io.file("fix.json", fixing_patch()), "--json"});
  CHECK(json_out(r)["status"] == "passed");
  CHECK(r.err.find("reaped 1 container(s)") != std::string::npos);
  CHECK(spares_of(state).empty());
  CHECK(containers_with_label("io.lazyagent.run=spare-" + name.substr(16)).empty());
  CHECK(spare_dirs(state) == 0);
}

TEST_CASE("warm: kill -9 between claim and start leaves nothing after reap", "[warm][quick]") {
  TempDir state, io;
  const std::string config = io.file("warm.yaml", warm_config(1, 600));
  const std::string name = json_out(make_spares(state, config, 1))["made"][0];
  const std::string marker = io.path() + "/paused";
  CliEnv env{state.path(), {{"LAZYAGENT_CRASH_PAUSE_AT", "after:copy"}, {"LAZYAGENT_CRASH_PAUSE_FILE", marker}}};
  TempDir out;
  const pid_t pid = spawn_cli(env, {"test", "--seed", seed_dir(), "--patch", io.file("fix.json", fixing_patch()),
                                    "--config", config, "--json"}, out.path());
  REQUIRE(wait_for([&] { return fs::exists(marker); }, 60));
  kill(pid, SIGKILL);
  CHECK(wait_cli(pid, 10) == 128 + SIGKILL);
  // The claim happened: the spare now carries a run's name and its copy is filled.
  const std::string spare_label = "io.lazyagent.run=spare-" + name.substr(16);
  REQUIRE(containers_with_label(spare_label).size() == 1);
  CHECK(sh("podman ps -a --filter label=" + spare_label + " --format '{{.Names}}'").rfind("lazyagent-sandbox-r-", 0) == 0);
  CHECK(entries_in(state.path() + "/lazyagent-oci/work/spare-" + name.substr(16) + "/seed") > 0);
  const json listed = spares_of(state);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["claimed"] == true);

  const json r = json_out(run_cli({state.path()}, {"reap", "--json"}));
  CHECK(r["removed"].size() == 1);
  CHECK(r["records_closed"].size() == 1);
  CHECK(containers_with_label(spare_label).empty());
  CHECK(spare_dirs(state) == 0);
  CHECK(entries_in(state.path() + "/lazyagent-oci/work") == 0);
}

TEST_CASE("warm: a spare made by `warm` is claimed with engine.warm 0, under another spelling of the seed path",
          "[warm]") {
  // Issue 28: `warm --seed seed --count 2`, then `test`: no spare was claimed
  // (only engine.warm > 0 claimed), and `seed`, `../seed` and `/abs/seed/`
  // were three scopes.
  TempDir state, io;
  const std::string config = std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml";
  REQUIRE(read_file(config).find("\n  warm:") == std::string::npos);  // engine.warm: the default, 0 (only commented)
  CliResult made = run_cli({state.path()}, {"warm", "--seed", seed_dir() + "/", "--config", config, "--json"});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  const json listed = spares_of(state);
  REQUIRE(listed.size() == 1);
  const std::string other_spelling = std::string(LAZYAGENT_SOURCE_DIR) + "/examples/../seed";
  CliResult r = run_cli({state.path()}, {"test", "--seed", other_spelling, "--patch", io.file("fix.json", fixing_patch()),
                                         "--config", config, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json_out(r);
  REQUIRE(j.contains("warm"));
  CHECK(j["warm"]["spare"] == listed[0]["name"].get<std::string>().substr(std::string("lazyagent-spare-").size()));
  CHECK(r.err.find("==> warm: claimed spare ") != std::string::npos);
  CHECK(j["status"] == "passed");
  CHECK(j.value("removal", "") != "deferred");  // engine.warm 0: the run removes its sandbox itself
  CHECK(container_gone(j["sandbox_id"]));
  CHECK(spares_of(state).empty());  // nothing refilled: engine.warm is 0
  // With no spare left, the next run is cold, as before.
  CliResult cold = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", io.file("fix2.json", fixing_patch()),
                                            "--config", config, "--json"});
  REQUIRE(cold.exit_code == 0);
  CHECK_FALSE(json_out(cold).contains("warm"));
  reap_and_check(state);
}
