// The podman calls a `test` makes, cold and warm (STYLE.md 20: a hot path has
// a call budget). The CLI writes every request it sends to
// LAZYAGENT_PODMAN_CALL_LOG (podman_client.h); these tests run the real
// binary against the real service and compare the list, method and path with
// ids and names masked, to the one written here. An expensive call added to
// the run path (GET /info took 0.7 s here and once slipped into every cold
// run) fails this test, not a user.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

struct Call {
  std::string method, path;
  long ms = 0;
};

std::vector<Call> read_calls(const std::string& file) {
  std::vector<Call> out;
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    const json j = json::parse(line);
    out.push_back({j.at("method").get<std::string>(), j.at("path").get<std::string>(), j.at("ms").get<long>()});
  }
  return out;
}

// "POST /containers/<64 hex>/init" -> "POST /containers/ID/init"; query
// strings and names that hold a run id or a spare id masked the same way.
std::string shape(const Call& c) {
  std::string p = c.path;
  p = std::regex_replace(p, std::regex("[0-9a-f]{64}"), "ID");
  p = std::regex_replace(p, std::regex("lazyagent-(sandbox|spare)-[A-Za-z0-9-]+"), "NAME");
  p = std::regex_replace(p, std::regex("\\?.*$"), "");
  return c.method + " " + p;
}

// The calls in shape, without the liveness pings of the exit wait
// (exit_file.h: one every 500 ms while the tests run, so their number
// depends on how long the tests take).
std::vector<std::string> shapes(const std::vector<Call>& calls) {
  std::vector<std::string> out;
  bool started = false;
  for (const auto& c : calls) {
    const std::string s = shape(c);
    if (started && s == "GET /_ping") continue;
    if (s == "POST /containers/ID/start") started = true;
    if (s.rfind("GET /containers/ID/logs", 0) == 0 || s.rfind("DELETE ", 0) == 0) started = false;
    out.push_back(s);
  }
  return out;
}

const std::vector<std::string> kCheck = {
    "GET /_ping",            // the service answers, its API version
    "GET /containers/json",  // the reaper: leftovers of dead runs
    "GET /images/localhost%2Flazyagent-sandbox%3Alatest/json",  // the image's digest
};
// One sandbox made for the run: create, init, verify (one inspect + the OCI
// spec read from disk), start, the exit from conmon's file, logs, remove
// (the DELETE's own report says the container is gone: no `exists` after it).
const std::vector<std::string> kColdSandbox = {
    "POST /containers/create", "POST /containers/ID/init", "GET /containers/ID/json",
    "POST /containers/ID/start", "GET /containers/ID/logs",  "DELETE /containers/ID",
};

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

}  // namespace

TEST_CASE("call budget: a cold test asks podman only what can change, never GET /info", "[integration]") {
  TempDir state, runtime, other_state;
  ::chmod(runtime.path().c_str(), 0700);
  const std::string log1 = state.path() + "/calls-1.jsonl", log2 = state.path() + "/calls-2.jsonl",
                    log3 = state.path() + "/calls-3.jsonl";
  // The first run after the service started (here: a fresh runtime
  // directory, so an empty machine-wide cache) asks the service once for
  // what only GET /info tells (its cgroup manager) and keeps it
  // (service_facts.h).
  auto first = test_patch({state.path(), {{"LAZYAGENT_PODMAN_CALL_LOG", log1}, {"XDG_RUNTIME_DIR", runtime.path()}}},
                          fixing_patch(), {"--no-baseline"});
  REQUIRE(first.cli.exit_code == 0);
  const auto firsts = shapes(read_calls(log1));
  CHECK(std::count(firsts.begin(), firsts.end(), "GET /info") == 1);

  // Every later process: cold (a sandbox made for the run), no GET /info,
  // even with a brand-new state directory (a CI job's fresh XDG_STATE_HOME):
  // the cache is the user's, in the runtime directory.
  auto cold = test_patch(
      {other_state.path(), {{"LAZYAGENT_PODMAN_CALL_LOG", log2}, {"XDG_RUNTIME_DIR", runtime.path()}}},
      fixing_patch(), {"--no-baseline"});
  REQUIRE(cold.cli.exit_code == 0);
  CHECK(cold.result["tests_passed"] == true);
  const auto calls = read_calls(log2);
  INFO(joined(shapes(calls)));
  CHECK(shapes(calls) == concat({kCheck, kColdSandbox}));
  for (const auto& c : calls) CHECK(c.path.find("/info") == std::string::npos);

  // With the baseline (the default): the unpatched seed's run first, the
  // same calls, and still nothing more. Each of the two runs makes its own
  // engine check (ping, the reaper's list, the image's digest: 10-20 ms in
  // all); sharing one check between them is left for later, and this list
  // says so.
  auto judged = test_patch({state.path(), {{"LAZYAGENT_PODMAN_CALL_LOG", log3}, {"XDG_RUNTIME_DIR", runtime.path()}}},
                           fixing_patch());
  REQUIRE(judged.cli.exit_code == 0);
  INFO(joined(shapes(read_calls(log3))));
  CHECK(shapes(read_calls(log3)) == concat({kCheck, kColdSandbox, kCheck, kColdSandbox}));
}

TEST_CASE("call budget: a warm test claims its spare with a list and a rename, no create or init", "[integration][quick]") {
  TempDir state;
  std::string config = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  const auto at = config.find("\nengine:\n");
  REQUIRE(at != std::string::npos);
  config.insert(at + 9, "  warm: 1\n");
  const std::string log1 = state.path() + "/calls-1.jsonl", log2 = state.path() + "/calls-2.jsonl";
  // The first run is cold and makes a spare after its result (the refill).
  auto first = test_patch({state.path(), {{"LAZYAGENT_PODMAN_CALL_LOG", log1}}}, fixing_patch(), {"--no-baseline"},
                          config);
  REQUIRE(first.cli.exit_code == 0);
  const std::string lock = state.path() + "/lazyagent-oci/refill.lock";
  if (std::filesystem::exists(lock)) sh("flock " + lock + " true");
  auto warm = test_patch({state.path(), {{"LAZYAGENT_PODMAN_CALL_LOG", log2}}}, fixing_patch(), {"--no-baseline"},
                         config);
  REQUIRE(warm.cli.exit_code == 0);
  REQUIRE(warm.result["warm"].is_object());
  if (std::filesystem::exists(lock)) sh("flock " + lock + " true");
  const auto calls = shapes(read_calls(log2));
  INFO(joined(calls));
  // Up to the result: no create, no init, one inspect (the claim's check).
  const auto logs = std::find_if(calls.begin(), calls.end(),
                                 [](const std::string& s) { return s.rfind("GET /containers/ID/logs", 0) == 0; });
  REQUIRE(logs != calls.end());
  const std::vector<std::string> until_result(calls.begin(), logs + 1);
  CHECK(std::count(until_result.begin(), until_result.end(), "POST /containers/create") == 0);
  CHECK(std::count(until_result.begin(), until_result.end(), "POST /containers/ID/init") == 0);
  CHECK(std::count(until_result.begin(), until_result.end(), "GET /info") == 0);
  CHECK(std::count(until_result.begin(), until_result.end(), "GET /containers/ID/json") == 1);
  CHECK(until_result == std::vector<std::string>{
                            "GET /_ping", "GET /containers/json", "GET /images/localhost%2Flazyagent-sandbox%3Alatest/json",
                            "GET /containers/json", "POST /containers/NAME/rename", "GET /containers/ID/json",
                            "POST /containers/ID/start", "GET /containers/ID/logs"});
  json reaped = json_out(run_cli({state.path()}, {"reap", "--json"}));
  CHECK(reaped["errors"].empty());
}
