// End-to-end: the real CLI, the real podman service, the real sandbox image.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <set>
#include <thread>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

using Run = TestRun;

}  // namespace

TEST_CASE("a fixing patch passes, leaves no container, and the seed is unchanged", "[sandbox]") {
  TempDir state;
  const std::string before = hash_tree(seed_dir());
  Run r = test_patch({state.path()}, fixing_patch());
  INFO(r.cli.err << r.result.dump(2));
  CHECK(r.cli.exit_code == 0);
  CHECK(r.result["tests_passed"] == true);
  CHECK(r.result["test_exit_code"] == 0);
  CHECK(r.result["changed_paths"] == json::array({"calculator.py"}));
  CHECK(r.result["test_output"].get<std::string>().find("Ran 4 tests") != std::string::npos);
  CHECK(r.result["image_digest"].get<std::string>().rfind("sha256:", 0) == 0);
  CHECK(r.result["policy"]["network"] == "none");
  CHECK(r.result["policy"]["memory_bytes"] == 512LL << 20);
  CHECK(r.result["timings"].contains("verify"));
  // The probe inside saw the policy, and its block is not part of test_output.
  CHECK(r.result["isolation_probe"]["interfaces"] == json::array({"lo"}));
  CHECK(r.result["isolation_probe"]["violations"].empty());
  CHECK(r.result["isolation_probe"]["root"] == "read-only");
  CHECK(r.result["test_output"].get<std::string>().find("lazyagent-probe") == std::string::npos);
  // The egress probe ran (python3 in the sandbox image) and reached nothing:
  // with only lo, every attempt fails at once.
  const json egress = r.result["isolation_probe"]["egress"];
  CHECK(egress["runner"] == "python3");
  CHECK(egress["ran"] == true);
  CHECK(egress["reached"].empty());
  CHECK(egress["attempts"].size() >= 3);  // this machine's addresses on 22, 80, 443
  std::set<std::string> targets;
  for (const auto& a : egress["attempts"]) {
    targets.insert(a["target"].get<std::string>() + " " + a["proto"].get<std::string>());
    CHECK(a["outcome"] != "connected");
  }
  CHECK(targets.count("host tcp") == 1);  // the host and the podman gateway: no route
  CHECK(egress["ms"].get<long>() < 1000);  // nothing to wait for: no route anywhere
  CHECK_FALSE(r.result.contains("reason"));
  CHECK(container_gone(r.result["sandbox_id"]));
  CHECK(hash_tree(seed_dir()) == before);
  // The run store has a durable record that `sandboxes` reads back.
  CliResult list = run_cli({state.path()}, {"sandboxes", "5", "--json"});
  REQUIRE(list.exit_code == 0);
  json rows = json::parse(list.out)["sandboxes"];
  REQUIRE(rows.size() == 2);  // the patched run and the seed's unpatched baseline (triage_run.h)
  const std::size_t mine = rows[0]["run_id"] == r.result["run_id"] ? 0 : 1;
  CHECK(rows[mine]["run_id"] == r.result["run_id"]);
  CHECK(rows[mine]["status"] == "passed");
  CHECK(rows[mine]["exists"] == false);
  CHECK(rows[1 - mine]["kind"] == "baseline");
  CHECK(rows[1 - mine]["run_id"] == r.result["triage"]["baseline"]["run_id"]);
  CHECK(rows[1 - mine]["exists"] == false);
}

TEST_CASE("an image without python3: the egress probe cannot run, said as not observable, only lo carries the "
          "verdict on podman", "[sandbox]") {
  // The Debian base image has sh and coreutils but no python3.
  TempDir state;
  Run r = test_patch({state.path()}, fixing_patch(), {"--no-baseline"},
                     "images:\n  sandbox: localhost/lazyagent-base:bookworm\n"
                     "test_command: grep -q 'return a + b' calculator.py\n");
  INFO(r.cli.err << r.result.dump(2));
  CHECK(r.cli.exit_code != 5);  // no isolation violation (the verdict itself: no runner report here)
  CHECK(r.result["test_exit_code"] == 0);
  const json probe = r.result["isolation_probe"];
  CHECK(probe["violations"].empty());
  CHECK(probe["egress"]["runner"] == "none");
  CHECK(probe["egress"]["ran"] == false);
  CHECK(probe["egress"]["attempts"].empty());
  CHECK(probe["not_observable"] == json::array({"egress (the sandbox image has no python3 to run the egress probe)"}));
}

TEST_CASE("a wrong patch fails with the runner's report", "[sandbox]") {
  TempDir state;
  Run r = test_patch({state.path()}, wrong_patch());
  CHECK(r.cli.exit_code == 1);
  CHECK(r.result["tests_passed"] == false);
  CHECK(r.result["test_exit_code"] == 1);
  // The runner's own report (runner_driver.h) decided.
  CHECK(r.result["reason"].get<std::string>().rfind("tests failed: the test command exited 1 (junit:", 0) == 0);
  CHECK(r.result["evidence"] == "driver");
  CHECK(container_gone(r.result["sandbox_id"]));
}

TEST_CASE("a refused patch creates no container and names every finding", "[sandbox]") {
  TempDir state;
  const std::string bad = R"({"files":[{"path":"../etc/passwd","content":"x"},{"path":"test_calculator.py","content":"y"}]})";
  Run r = test_patch({state.path()}, bad);
  CHECK(r.cli.exit_code == 4);
  CHECK(r.result["sandbox_id"] == "");
  std::vector<std::string> codes;
  for (const auto& f : r.result["findings"]) codes.push_back(f["code"]);
  CHECK(std::find(codes.begin(), codes.end(), "dot_component") != codes.end());
  CHECK(std::find(codes.begin(), codes.end(), "not_allowed") != codes.end());
}

TEST_CASE("a hang is cut at the timeout and the container removed", "[sandbox]") {
  TempDir state;
  const auto t0 = std::chrono::steady_clock::now();
  Run r = test_patch({state.path()}, attack_patch("import time\ntime.sleep(3600)"), {"--timeout", "3"});
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.cli.exit_code == 1);
  CHECK(r.result["reason"] == "timeout: the tests did not finish within 3 s and were killed");
  CHECK(secs < 15);
  CHECK(container_gone(r.result["sandbox_id"]));
}

TEST_CASE("exit 0 without a test report is not a pass", "[sandbox]") {
  TempDir state;
  Run r = test_patch({state.path()}, attack_patch("import os\nos._exit(0)"));
  CHECK(r.cli.exit_code == 1);
  CHECK(r.result["test_exit_code"] == 0);
  CHECK(r.result["tests_passed"] == false);
  CHECK(r.result["reason"] ==
        "no test report: the runner's report was not written (the test process ended before its runner finished)");
  // A command the tool does not rewrite: the output is the evidence, and it has no report either.
  Run text = test_patch({state.path()}, attack_patch("import os\nos._exit(0)"),
                        {"--test-command", "python3 -m unittest -v 2>&1"});
  CHECK(text.result["evidence"] == "output");
  CHECK(text.result["reason"] == "no test report: the test command exited 0 but no test runner reported results");
  Run none = test_patch({state.path()}, fixing_patch(),
                        {"--test-command", "python3 -m unittest discover -p 'nomatch_*.py'"});
  CHECK(none.result["tests_passed"] == false);
  CHECK(none.result["reason"] == "no tests ran: unittest found no tests");
}

TEST_CASE("engine failures are exit 5, never test failures", "[sandbox]") {
  TempDir state, cfg;
  const std::string patch = cfg.file("p.json", fixing_patch());
  CliResult gone = run_cli({state.path(), {{"CONTAINER_HOST", "unix://" + cfg.path() + "/no.sock"}}},
                           {"test", "--seed", seed_dir(), "--patch", patch, "--json"});
  CHECK(gone.exit_code == 5);
  CHECK(json::parse(gone.out)["error"].get<std::string>().find("cannot reach podman at") != std::string::npos);
  const std::string config = cfg.file("c.yaml", "seed: " + seed_dir() +
                                                    "\nimages:\n  sandbox: localhost/lazyagent-missing-image:none\n");
  CliResult missing = run_cli({state.path()}, {"test", "--config", config, "--patch", patch, "--json"});
  CHECK(missing.exit_code == 5);
  CHECK(json::parse(missing.out)["error"].get<std::string>().find("image not found") != std::string::npos);
}
