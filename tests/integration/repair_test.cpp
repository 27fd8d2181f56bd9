// The repair loop (`run --attempts`, `--max-tokens`), the baseline and
// per-test triage, flaky-test re-runs and the infra_error category, end to
// end: the real CLI, real podman, the real planner and sandbox images, and
// the scripted provider as a real HTTP server.
//
// The planner runs the binary inside its image; a build of this branch needs
// an image with this binary: set LAZYAGENT_IT_PLANNER_IMAGE to it (default
// localhost/lazyagent-planner:latest, which scripts/build-images.sh rebuilds).
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "sk-lazyagent-repair-it-0123456789abcdef";

std::string fixture_seed(const std::string& name) {
  return std::string(LAZYAGENT_SOURCE_DIR) + "/tests/fixtures/seeds/" + name;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  return s.replace(pos, from.size(), to);
}

std::vector<json> records(const std::string& state) {
  std::vector<json> out;
  for (const auto& e : fs::directory_iterator(state + "/lazyagent-oci/runs")) {
    out.push_back(json::parse(read_file(e.path().string())));
  }
  return out;
}

// The scripted provider behind podman secrets (harness.h), no retries.
struct Provider : PodmanProvider {
  explicit Provider(lazyagent::StubScript script) : PodmanProvider(std::move(script), kKey, 0) {}
};

lazyagent::StubReply reply(const std::string& patch, std::vector<std::string> require = {}) {
  lazyagent::StubReply r;
  r.content = json::parse(patch).dump();
  r.require = std::move(require);
  return r;
}

// A wrong add that also prints a terminal escape sequence at import.
std::string wrong_noisy_patch() {
  json p = json::parse(wrong_patch());
  std::string content = p["files"][0]["content"];
  p["files"][0]["content"] = "print('\\x1b]0;pwned\\x07 noisy import')\n" + content;
  return p.dump();
}

std::string triage_patch(const std::string& total_fix, const std::string& label_body) {
  std::string src = read_file(fixture_seed("triage") + "/pricing.py");
  src = replaced(src, "return sum(prices[:-1])  # bug: drops the last item", total_fix);
  src = replaced(src, "return name.title()", label_body);
  return patch_json("pricing.py", src);
}

CliResult test_cli(const CliEnv& env, const std::string& seed, const std::string& allow, const std::string& patch,
                   std::vector<std::string> extra = {}) {
  TempDir d;
  std::vector<std::string> args = {"test", "--seed", seed, "--allow", allow, "--patch", d.file("p.json", patch), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(env, args);
}

}  // namespace

TEST_CASE("run --attempts 2: a wrong patch, its failure output goes back, the second patch passes", "[repair]") {
  lazyagent::StubScript s;
  s.api_key = kKey;
  // The second reply is refused (HTTP 400) unless the request carries the
  // first attempt's failure output, escaped.
  s.replies = {reply(wrong_noisy_patch()),
               reply(fixing_patch(), {"Previous attempt 1 did not pass: tests failed: the test command exited 1",
                                      "AssertionError: 6 != 5", "\\x1b]0;pwned\\x07 noisy import",
                                      "still_failing: test_calculator.CalculatorTest.test_add"})};
  s.replies[1].usage = {100, 20, 120};
  Provider p(s);
  CliResult r = p.run({"--attempts", "3"});
  json j = json_out(r);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["stop_reason"] == "passed");
  REQUIRE(j["attempts"].size() == 2);
  const json& a1 = j["attempts"][0];
  const json& a2 = j["attempts"][1];
  CHECK(a1["verdict"] == "failed");
  CHECK(a1["test_exit_code"] == 1);
  CHECK(a1["tokens"] == 46);
  CHECK(a2["verdict"] == "passed");
  CHECK(a2["test_exit_code"] == 0);
  CHECK(a2["tokens"] == 120);
  CHECK(a1["patch_sha256"].get<std::string>().size() == 64);
  CHECK(a1["patch_sha256"] != a2["patch_sha256"]);
  CHECK(a1["run_id"] != a2["run_id"]);
  CHECK(j["run_id"] == a2["run_id"]);
  CHECK(j["total_usage"]["total_tokens"] == 166);
  CHECK(j["usage"]["total_tokens"] == 120);  // the last attempt's, as before
  // Both attempts' sandboxes existed and are gone; each attempt has a record.
  CHECK(j["sandbox_id"].get<std::string>().size() == 64);
  CHECK(container_gone(j["sandbox_id"]));
  CHECK(p.stub().requests() == 2);
  const auto bodies = p.stub().request_log();
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[0].find("Previous attempt") == std::string::npos);
  // The raw escape never reaches the provider; its visible form does.
  const json second = json::parse(bodies[1]);
  const std::string prompt = second["messages"][1]["content"];
  CHECK(prompt.find('\x1b') == std::string::npos);
  CHECK(prompt.find("<<<test-output\n") != std::string::npos);
  int attempt_records = 0;
  for (const auto& rec : records(p.state.path())) {
    if (rec.value("kind", "") == "run") ++attempt_records;
  }
  CHECK(attempt_records == 2);
}

TEST_CASE("run --attempts: --max-tokens stops the loop with the reason", "[repair]") {
  lazyagent::StubScript s;
  s.api_key = kKey;
  s.replies = {reply(wrong_patch())};  // always wrong, 46 tokens each
  Provider p(s);
  CliResult r = p.run({"--attempts", "5", "--max-tokens", "50"});
  json j = json_out(r);
  CHECK(r.exit_code == 1);
  CHECK(j["tests_passed"] == false);
  CHECK(j["stop_reason"] == "max_tokens");
  CHECK(j["attempts"].size() == 2);  // 46 < 50 after one, 92 after two
  CHECK(j["total_usage"]["total_tokens"] == 92);
  CHECK(j["reason"].get<std::string>().rfind(
            "stopped after attempt 2 of 5: the provider used 92 tokens, at or over --max-tokens 50 "
            "(last attempt: tests failed: the test command exited 1",
            0) == 0);
  CHECK(p.stub().requests() == 2);

  // Without a ceiling the same script runs every attempt.
  CliResult all = p.run({"--attempts", "3"});
  json k = json_out(all);
  CHECK(all.exit_code == 1);
  CHECK(k["stop_reason"] == "attempts_exhausted");
  CHECK(k["attempts"].size() == 3);
}

TEST_CASE("test: triage names what a patch fixed, left failing and newly broke", "[repair][triage]") {
  TempDir state;
  const std::string seed = fixture_seed("triage");
  CliResult r = test_cli({state.path()}, seed, "pricing.py", triage_patch("return sum(prices)", "return name.upper()"));
  json j = json_out(r);
  CHECK(r.exit_code == 1);
  CHECK(j["category"] == "failed");
  const json& t = j["triage"];
  CHECK(t["available"] == true);
  CHECK(t["fixed"] == json::array({"test_pricing.PricingTest.test_total_sums_all"}));
  CHECK(t["still_failing"] == json::array({"test_pricing.PricingTest.test_rounded_half_up"}));
  CHECK(t["newly_broken"] == json::array({"test_pricing.PricingTest.test_label"}));
  CHECK(t["passing"] == json::array({"test_pricing.PricingTest.test_rounded_plain",
                                     "test_pricing.PricingTest.test_total_empty"}));
  CHECK(t["baseline"]["cached"] == false);
  CHECK(t["baseline"]["test_exit_code"] == 1);
  CHECK(j["tests"]["format"] == "junit");  // the runner's own report (runner_driver.h)
  CHECK(j["evidence"] == "driver");
  CHECK(j["tests"]["tests"].size() == 5);
  CHECK(r.err.find("==> baseline: the seed's tests without the patch") != std::string::npos);

  // The baseline is cached by the seed's content hash: the next patch reuses it.
  CliResult again = test_cli({state.path()}, seed, "pricing.py",
                             triage_patch("return sum(prices)", "return name.title()"));
  json k = json_out(again);
  CHECK(k["triage"]["baseline"]["cached"] == true);
  CHECK(k["triage"]["baseline"]["run_id"] == t["baseline"]["run_id"]);
  CHECK(again.err.find("==> baseline") == std::string::npos);
  CHECK(k["triage"]["newly_broken"].empty());
  CHECK(k["triage"]["fixed"] == json::array({"test_pricing.PricingTest.test_total_sums_all"}));
}

TEST_CASE("test: a patch that skips every test exits 0 but is not a pass", "[repair][triage]") {
  TempDir state, io;
  CliResult r = test_cli({state.path()}, fixture_seed("triage"), "pricing.py",
                         patch_json("pricing.py", "import unittest\nraise unittest.SkipTest('nothing to see')\n"));
  json j = json_out(r);
  CHECK(j["test_exit_code"] == 0);  // the runner itself says OK (skipped=1)
  CHECK(r.exit_code == 1);
  CHECK(j["tests_passed"] == false);
  // The runner's own report (runner_driver.h) counts the skipped module as
  // no test run; with the text alone the triage's "newly broken: ..." decides.
  CHECK(j["reason"] == "no tests ran: junit found no tests");
  CHECK(j["triage"]["newly_broken"].size() == 3);  // the three that passed before
  CliResult text = test_cli({state.path()}, fixture_seed("triage"), "pricing.py",
                            patch_json("pricing.py", "import unittest\nraise unittest.SkipTest('nothing to see')\n"),
                            {"--config", io.file("output.yaml", "report: output\n")});
  json t = json_out(text);
  CHECK(text.exit_code == 1);
  CHECK(t["evidence"] == "output");
  CHECK(t["reason"].get<std::string>().rfind("newly broken: test_pricing.PricingTest.test_label", 0) == 0);
}

TEST_CASE("test --rerun: a test that fails at random is marked flaky, the patch is not blamed", "[repair][flaky]") {
  TempDir state;
  const std::string seed = fixture_seed("flaky");
  const std::string fix = patch_json("counter.py", "def increment(n):\n    return n + 1\n");
  // test_coin fails in half the runs. Wait for a first run that fails (the
  // case re-runs are for); then a re-run passes with probability 1 - 2^-10.
  json j;
  CliResult r;
  for (int i = 0; i < 12; ++i) {
    r = test_cli({state.path()}, seed, "counter.py", fix, {"--rerun", "10"});
    j = json_out(r);
    if (j["triage"]["runs"].size() > 1) break;
    CHECK(j["category"] == "passed");  // a first run that passed needs no re-run
  }
  REQUIRE(j["triage"]["runs"].size() > 1);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["category"] == "flaky");
  CHECK(j["triage"]["flaky"] == json::array({"test_counter.CounterTest.test_coin"}));
  CHECK(j["triage"]["newly_broken"].empty());
  const json& runs = j["triage"]["runs"];
  CHECK(runs[0]["tests_passed"] == false);
  CHECK(runs.back()["tests_passed"] == true);
  CHECK(j["run_id"] == runs.back()["run_id"]);  // the deciding run
  CHECK(runs[0]["run_id"] != runs.back()["run_id"]);
  CHECK(j["triage"]["fixed"] == json::array({"test_counter.CounterTest.test_increment"}));

  // Without re-runs, the same failure is a plain failure.
  for (int i = 0; i < 12; ++i) {
    r = test_cli({state.path()}, seed, "counter.py", fix);
    j = json_out(r);
    if (!j["tests_passed"].get<bool>()) break;
  }
  CHECK(r.exit_code == 1);
  CHECK(j["category"] == "failed");
  CHECK(j["triage"]["runs"].size() == 1);
}

TEST_CASE("test: an engine error is infra_error, retried once, never a test failure", "[repair][infra][quick]") {
  TempDir state, dir;
  const std::string cfg = dir.file("c.yaml", "seed: " + seed_dir() +
                                                 "\nimages:\n  sandbox: localhost/lazyagent-no-such-image-repair:latest\n");
  CliResult r = run_cli({state.path()}, {"test", "--config", cfg, "--patch", dir.file("p.json", fixing_patch()), "--json"});
  json j = json_out(r);
  CHECK(r.exit_code == 5);
  CHECK(j["category"] == "infra_error");
  CHECK(j["error_kind"] == "engine");
  const std::string e = j["error"];
  CHECK(e.find("infra_error (not a test failure, retried 1x): ") != std::string::npos);
  CHECK(e.find("image not found") != std::string::npos);
  CHECK(r.err.find("==> infra_error, retrying once in a fresh sandbox") != std::string::npos);
  const auto recs = records(state.path());
  CHECK(recs.size() == 2);  // the first try and its retry
  for (const auto& rec : recs) {
    CHECK(rec["status"] == "error");
    CHECK(rec["category"] == "infra_error");
    CHECK(rec["tests_passed"] == false);
    CHECK(rec.value("test_exit_code", -1) == -1);  // no test ran
  }
}

TEST_CASE("test: an isolation probe that cannot report aborts the run, is stored, and is not retried",
          "[repair][infra][quick]") {
  // /work is a 1 MiB tmpfs and the seed holds 2 MiB: the sandbox script's
  // copy fails before the probe prints, so the probe reports nothing.
  TempDir state, dir, seed;
  for (const char* f : {"calculator.py", "test_calculator.py"}) seed.file(f, read_file(seed_dir() + "/" + f));
  seed.file("big.txt", std::string(2 << 20, 'x'));
  const std::string cfg = dir.file("c.yaml", "seed: " + seed.path() + "\nlimits:\n  work_tmpfs_mib: 1\n");
  CliResult r = run_cli({state.path()}, {"test", "--config", cfg, "--patch", dir.file("p.json", fixing_patch()), "--json"});
  json j = json_out(r);
  CHECK(r.exit_code == 5);
  CHECK(j["category"] == "isolation_violation");
  CHECK(j["error"].get<std::string>().find("the isolation probe inside the sandbox found: the isolation probe did not report") !=
        std::string::npos);
  CHECK(r.err.find("retrying") == std::string::npos);
  const auto recs = records(state.path());
  REQUIRE(recs.size() == 1);
  CHECK(recs[0]["category"] == "isolation_violation");
  CHECK(recs[0]["isolation_probe"]["violations"].size() == 1);
  CHECK(container_gone(recs[0]["sandbox_id"]));
}
