// What an allow-listed set-up or planner leaves when its process is killed
// with SIGKILL (issue 31): the internal network, the squid container and the
// set-up's or planner's own container stay, and `reap` removes them all (the
// owner's pid is gone: ownership.h), counting the network in
// `networks_removed`. Against the real podman service, the real proxy and
// planner images and the real CLI.
//
// Targets: the Debian mirror read from this machine's apt sources (listed,
// never contacted: the set-up only sleeps) and the scripted provider on this
// machine.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <string>

#include "attack_common.h"
#include "harness.h"

using nlohmann::json;
using namespace it;
using namespace sec;

namespace {

// What the process `pid` left: its networks and its containers (names), one per line.
std::string left_by(pid_t pid) {
  const std::string label = "label=io.lazyagent.pid=" + std::to_string(pid);
  return sh("podman network ls --filter " + label + " --format 'network {{.Name}}'; podman ps -a --filter " + label +
            " --format 'container {{.Names}}'");
}

std::size_t lines(const std::string& s, const std::string& prefix) {
  std::size_t n = 0, pos = 0;
  while ((pos = s.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || s[pos - 1] == '\n') ++n;
    pos += prefix.size();
  }
  return n;
}

bool running(pid_t pid, const std::string& role) {
  return !sh("podman ps --filter label=io.lazyagent.pid=" + std::to_string(pid) +
             " --filter label=io.lazyagent.role=" + role + " --filter status=running --format '{{.ID}}'")
              .empty();
}

// `reap --json` in `state`: its report (exit 0 required), and that `network`
// and every container `before` named are among what it removed.
json reap_and_check(const std::string& state, const std::string& before) {
  const CliResult r = run_cli({state}, {"reap", "--json"});
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const json j = json_out(r);
  INFO(j.dump());
  std::size_t pos = 0;
  while ((pos = before.find("network ", pos)) != std::string::npos) {
    const std::string name = before.substr(pos + 8, before.find('\n', pos) - pos - 8);
    CHECK(std::find(j["networks_removed"].begin(), j["networks_removed"].end(), name) != j["networks_removed"].end());
    pos += 8;
  }
  pos = 0;
  while ((pos = before.find("container ", pos)) != std::string::npos) {
    const std::string name = before.substr(pos + 10, before.find('\n', pos) - pos - 10);
    CHECK(j["removed"].dump().find("\"" + name + " (") != std::string::npos);
    pos += 10;
  }
  return j;
}

// SIGKILL to `pid`, then: it left its network, squid and its own container
// (named `own` + ...), and `reap --json` in `state` removes them all.
void kill_then_reap(pid_t pid, const std::string& state, const std::string& own, const std::string& what) {
  kill(pid, SIGKILL);
  CHECK(wait_cli(pid, 10) == 128 + SIGKILL);
  const std::string before = left_by(pid);
  INFO(before);
  // The crash really left them.
  CHECK(lines(before, "network lazyagent-egress-") == 1);
  CHECK(lines(before, "container lazyagent-egress-") == 1);
  CHECK(lines(before, "container " + own) == 1);

  const json j = reap_and_check(state, before);
  CHECK(j["errors"].empty());
  CHECK(left_by(pid).empty());
  evidence("egress crash, " + what + ": left " + std::to_string(lines(before, "network ")) + " network(s) and " +
           std::to_string(lines(before, "container ")) + " container(s); after reap: \"" + left_by(pid) + "\"");
}

}  // namespace

TEST_CASE("egress crash: SIGKILL during an allow-listed set-up, then reap removes its network, proxy and set-up",
          "[egress-crash]") {
  const std::string mirror = debian_mirror_host();
  REQUIRE(!mirror.empty());
  TempDir dir, state, io;
  const std::string config = dir.file("env.yaml", "seed: " + seed_dir() + "\nallow: [calculator.py]\n"
                                                  "environment:\n  setup: [\"sleep 600\"]\n  egress: [" + mirror + "]\n");
  const pid_t pid = spawn_cli({state.path()}, {"env", "build", "--config", config, "--rebuild", "--json"}, io.path());
  // The set-up runs (its probe, then the sleep): the proxy is up by then.
  REQUIRE(wait_for([&] { return running(pid, "envbuild"); }, 120));
  kill_then_reap(pid, state.path(), "lazyagent-envbuild-", "set-up");
}

TEST_CASE("egress crash: SIGKILL during an allow-listed planner run, then reap removes its network, proxy and planner",
          "[egress-crash]") {
  lazyagent::StubScript script;
  script.api_key = "sk-lazyagent-crash-key-0123456789";
  lazyagent::StubReply slow;
  slow.content = json::parse(fixing_patch()).dump();
  slow.delay_ms = 120000;  // the planner waits on its provider when the CLI is killed
  script.replies = {slow};
  PodmanProvider p(script, script.api_key, 0, "  network: allowlist\n");
  TempDir io;
  const pid_t pid = spawn_cli({p.state.path()}, {"run", "--config", p.config(), "--json"}, io.path());
  // Its request came through the proxy: the planner, squid and the network exist.
  REQUIRE(wait_for([&] { return !p.stub().request_log().empty(); }, 180));
  kill_then_reap(pid, p.state.path(), "lazyagent-planner-", "planner");
}
