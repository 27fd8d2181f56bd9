// End-to-end: the real CLI, the real podman service, the real sandbox image.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "harness.h"
#include "policy/isolation_probe.h"
#include "policy/sandbox_policy.h"

using nlohmann::json;
using namespace it;

namespace {

using Run = TestRun;

}  // namespace

TEST_CASE("a fixing patch passes, leaves no container, and the seed is unchanged", "[sandbox][quick]") {
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
  // Only lo in both views: no route anywhere, so the egress probe was not
  // needed and its interpreter not started (egress_probe.h; the next test
  // shows it runs as soon as the sandbox sees another interface).
  const json egress = r.result["isolation_probe"]["egress"];
  CHECK(egress["runner"] == "not-needed");
  CHECK(egress["ran"] == false);
  CHECK(egress["attempts"].empty());
  CHECK(egress["reached"].empty());
  CHECK(egress["not_needed"].get<std::string>().rfind("only lo in the sandbox", 0) == 0);
  CHECK_FALSE(r.result["isolation_probe"].contains("not_observable"));
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

// The sandbox's own script (sandbox_command) in the real image under
// --network none, its probe block read as the engine reads it. The egress
// probe's decision rests on what the sandbox sees: a sysfs listing another
// interface (a fake /sys/class/net bound over it) must start it, as must
// "always" (Kubernetes); only lo in both views skips it.
TEST_CASE("the egress probe runs as soon as the sandbox sees an interface besides lo, or when asked always, "
          "and only then", "[sandbox]") {
  TempDir d;
  std::ofstream(d.path() + "/s.sh") << lazyagent::sandbox_command("true", 4096, "host=10.88.0.1:22")[2];
  std::filesystem::create_directories(d.path() + "/net/lo");
  std::filesystem::create_directories(d.path() + "/net/eth9");
  auto probe = [&](const std::string& extra_mount, const std::string& fifth,
                   const std::string& image = "localhost/lazyagent-sandbox:latest") {
    const std::string out = sh("podman run --rm --network none --read-only --cap-drop ALL --tmpfs /work --tmpfs /tmp "
                               "--label io.lazyagent.role=test -v " + seed_dir() + ":/seed:ro -v " + d.path() +
                               ":/m:ro " + extra_mount + " " + image + " /bin/sh /m/s.sh true 2048 "
                               "2048 host=10.88.0.1:22 " + fifth + " 2>&1");
    std::string rest;
    lazyagent::ProbeReport r = lazyagent::take_probe(out, &rest);
    INFO(out);
    REQUIRE(r.found);
    return r;
  };
  const lazyagent::ProbeReport lo_only = probe("", "");
  CHECK(lo_only.interfaces == std::vector<std::string>{"lo"});
  CHECK(lo_only.egress.runner == lazyagent::kEgressNotNeeded);
  CHECK(lo_only.egress.attempts.empty());

  const lazyagent::ProbeReport other = probe("-v " + d.path() + "/net:/sys/class/net:ro", "");
  CHECK(other.interfaces == std::vector<std::string>({"eth9", "lo"}));
  CHECK(other.egress.runner == "python3");
  CHECK(other.egress.finished);
  REQUIRE(other.egress.attempts.size() == 1);
  CHECK(other.egress.attempts[0].outcome == "unreachable");  // still no route: the kernel's view has only lo

  const lazyagent::ProbeReport always = probe("", "always");
  CHECK(always.egress.runner == "python3");
  CHECK(always.egress.finished);
  CHECK(always.egress.attempts.size() == 1);

  // An image without python3 (the Debian base) where the probe is needed:
  // said as such ("none"), which the modes resting on it refuse.
  const lazyagent::ProbeReport none =
      probe("-v " + d.path() + "/net:/sys/class/net:ro", "", "localhost/lazyagent-base:bookworm");
  CHECK(none.egress.runner == "none");
  CHECK_FALSE(none.egress.finished);
  CHECK(containers_with_label("io.lazyagent.role=test").empty());
}

TEST_CASE("an image without python3 on podman: only lo, so the egress probe is not needed and nothing is "
          "unobserved", "[sandbox][quick]") {
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
  CHECK(probe["interfaces"] == json::array({"lo"}));
  CHECK(probe["egress"]["runner"] == "not-needed");
  CHECK(probe["egress"]["ran"] == false);
  CHECK(probe["egress"]["attempts"].empty());
  CHECK_FALSE(probe.contains("not_observable"));
}

TEST_CASE("a wrong patch fails with the runner's report", "[sandbox][quick]") {
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

TEST_CASE("a refused patch creates no container and names every finding", "[sandbox][quick]") {
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

TEST_CASE("engine failures are exit 5, never test failures", "[sandbox][quick]") {
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
