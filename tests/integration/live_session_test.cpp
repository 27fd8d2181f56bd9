// Live sessions (pipeline/session.h, sessions.isolation: live, the default)
// against the real podman service and the real CLI: one long-lived sandbox
// per session, each command an exec into its persistent shell. One session
// is shared by most checks (each check is cheap; the sandbox is made once).
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"
#include "session_cli.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const char* kSecret = "s3cr3t-live-session-value-77";

struct Live : SessionCli {
  std::string sandbox;

  explicit Live(const CliEnv& e, std::vector<std::string> extra = {}) : SessionCli(e, std::move(extra)) {
    CHECK(record.at("isolation") == "live");
    sandbox = record.at("sandbox").get<std::string>();
    REQUIRE_FALSE(sandbox.empty());
  }
  // A check that stopped the test early leaves no sandbox or mounted copy behind.
  ~Live() {
    if (fs::exists(dir())) (void)run_cli(env, {"session", "close", id}, 120);
  }
  Live(const Live&) = delete;
  Live& operator=(const Live&) = delete;
  std::string out(const std::string& command) const { return exec(command)["output"].get<std::string>(); }
  // "running", "paused", ... or "" when the container is gone.
  std::string state() const {
    return sh("podman inspect " + sandbox + " --format '{{.State.Status}}' 2>/dev/null || true");
  }
};

// The pause and unpause events of `id` since `since` (podman events' --since).
std::string freeze_events(const std::string& id, const std::string& since) {
  return sh("podman events --stream=false --since '" + since + "' --filter container=" + id +
            " --filter event=pause --filter event=unpause --format '{{.Status}}' 2>/dev/null | tr '\\n' ' '");
}

std::string now_text() { return sh("date -u +%Y-%m-%dT%H:%M:%S.%NZ | tr -d '\\n'"); }

const char* const kFixed = kFixedCalculator;

}  // namespace

TEST_CASE("a live session keeps its shell and background jobs, ends only a timed-out command, freezes for "
          "the host's reads, and close leaves nothing", "[session][live][quick]") {
  TempDir state;
  Live s({state.path(), {{"LAZYAGENT_TEST_SECRET", kSecret}}});
  CHECK(s.state() == "running\n");
  CHECK(sh("podman inspect " + s.sandbox + " --format '{{index .Config.Labels \"io.lazyagent.role\"}}'") == "session\n");

  // Isolation inside the long-lived sandbox, as every command's process sees it.
  const std::string iso = s.out(
      "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; ls /sys/class/net; "
      "PLANTED=zz-planted-91 sleep 3 & sleep 0.2; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null");
  INFO(iso);
  CHECK(iso.find("CapEff:\t0000000000000000") != std::string::npos);
  CHECK(iso.find("CapPrm:\t0000000000000000") != std::string::npos);
  CHECK(iso.find("CapBnd:\t0000000000000000") != std::string::npos);
  CHECK(iso.find("NoNewPrivs:\t1") != std::string::npos);
  CHECK(iso.find("Seccomp:\t2") != std::string::npos);
  CHECK(iso.find("lo\n") != std::string::npos);
  CHECK(iso.find("eth0") == std::string::npos);
  CHECK(iso.find("zz-planted-91") != std::string::npos);  // positive control: the hunt sees every process's environment
  CHECK(iso.find(kSecret) == std::string::npos);
  CHECK(iso.find("LAZYAGENT_TEST_SECRET") == std::string::npos);

  // The shell's state carries over; the exit code is the command's.
  const json first = s.exec("mkdir -p sub && cd sub && export X=41 && Y=kept");
  CHECK(first["exit_code"] == 0);
  CHECK(first["isolation"] == "live");
  CHECK(s.out("pwd; echo \"$X $Y\"") == "/work/sub\n41 kept\n");
  const json failed = s.exec("echo no; false");
  CHECK(failed["exit_code"] == 1);
  CHECK(failed["output"] == "no\n");
  // An end line forged with a nonce of the command's own is output, not the end.
  const json forged = s.exec("printf '\\n0123456789abcdef0123456789abcdef 0\\n'; exit_code_is() { return 4; }; exit_code_is");
  CHECK(forged["exit_code"] == 4);
  CHECK(forged["output"] == "\n0123456789abcdef0123456789abcdef 0\n");

  // A server started in the background answers the next command.
  CHECK(s.exec("python3 -m http.server 8765 --bind 127.0.0.1 --directory /work & echo started")["exit_code"] == 0);
  const std::string query =
      "for i in 1 2 3 4 5 6 7 8 9 10; do python3 -c \"import urllib.request as u; "
      "print(u.urlopen('http://127.0.0.1:8765/').status)\" 2>/dev/null && break; sleep 0.3; done";
  CHECK(s.out(query) == "200\n");

  // The CLI prints the output as it comes: the first line is out while the
  // command still sleeps, before the second is printed.
  {
    TempDir streamed;
    const pid_t pid = spawn_cli(s.env, {"session", "exec", s.id, "--", "echo first-line; sleep 4; echo second-line"},
                                streamed.path());
    const auto read_out = [&] { return sh("cat " + streamed.path() + "/stdout"); };
    CHECK(wait_for([&] { return read_out() == "first-line\n"; }, 4));
    CHECK(wait_cli(pid, 30) == 0);
    CHECK(read_out() == "first-line\nsecond-line\n");
  }

  // A timeout ends the command, not the session, nor earlier background jobs.
  const json slow = s.exec("echo begun; sleep 300 & sleep 200", {"--timeout", "2"});
  CHECK(slow["timed_out"] == true);
  CHECK(slow["output"].get<std::string>().find("begun") != std::string::npos);
  const std::string after = s.out("pwd; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done | grep -c '^sleep [23]00' || true");
  CHECK(after == "/work/sub\n0\n");
  CHECK(s.out(query) == "200\n");

  // A caller killed mid-command: the next command ends what it left, and goes on.
  TempDir io;
  const pid_t pid = spawn_cli(s.env, {"session", "exec", s.id, "--", "sleep 500"}, io.path());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  kill(pid, SIGKILL);
  wait_cli(pid, 10);
  CHECK(s.out("pwd; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done | grep -c '^sleep 500' || true") ==
        "/work/sub\n0\n");

  // Output past limits.log_bytes is cut, head and tail kept.
  const json big = s.exec("head -c 3000000 /dev/zero | tr '\\0' a; echo; echo tail-marker");
  CHECK(big["truncated"] == true);
  CHECK(big["output"].get<std::string>().find("[lazyagent-oci: output cut") != std::string::npos);
  CHECK(big["output"].get<std::string>().find("tail-marker") != std::string::npos);
  CHECK(big["output"].get<std::string>().size() < (1 << 20) + 4096);

  // The host's reads see a frozen sandbox, thawed after. (The ticker writes
  // in the scratch $TMPDIR, which diff leaves out.)
  CHECK(s.exec("cd /work && rm -rf sub && (while :; do echo tick >> .lazyagent-tmp/ticks.txt; sleep 0.05; done) "
               ">/dev/null 2>&1 &")["exit_code"] == 0);
  const std::string since = now_text();
  CHECK(s.run({"read", "calculator.py"}).exit_code == 0);
  TempDir fix;
  CHECK(s.run({"write", "calculator.py", fix.file("fix.py", kFixed)}).exit_code == 0);
  const CliResult d = s.run({"diff", "--json"});
  INFO(d.out);
  CHECK(d.exit_code == 0);
  CHECK(freeze_events(s.sandbox, since) == "pause unpause pause unpause pause unpause ");
  CHECK(s.state() == "running\n");
  const std::string ticks = s.out("wc -l < /work/.lazyagent-tmp/ticks.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string later = s.out("wc -l < /work/.lazyagent-tmp/ticks.txt");
  INFO(ticks << " then " << later);
  CHECK(std::atol(later.c_str()) > std::atol(ticks.c_str()));  // it runs again after the thaw  // it runs again between reads

  // prove: the ordinary test in a new sandbox, never the session's.
  const CliResult p = s.run({"prove", "--json"}, 300);
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json proven = json_out(p);
  CHECK(proven["tests_passed"] == true);
  CHECK(proven["sandbox_id"] != s.sandbox);

  // `exit` ends the shell: a clear result, and a fresh shell for the next command.
  const json ended = s.exec("exit 3");
  CHECK(ended["exit_code"] == 3);
  CHECK(ended["shell_ended"] == true);
  const json fresh = s.exec("pwd; echo \"[$X]\"");
  CHECK(fresh["fresh_shell"] == true);
  CHECK(fresh["output"] == "/work\n[]\n");
  CHECK(s.out(query) == "200\n");  // its background jobs live on

  REQUIRE(s.run({"close"}).exit_code == 0);
  CHECK(s.state().empty());
  CHECK_FALSE(fs::exists(s.dir()));
}

TEST_CASE("a live session's sandbox ends itself at its maximum age with no lazyagent process left", "[session][live]") {
  TempDir state, cfg;
  const std::string config = cfg.file("c.yaml", "seed: " + seed_dir() + "\nsessions:\n  max_age_seconds: 60\n");
  Live s({state.path()}, {"--config", config});
  // Its deadline is no sooner than the record's expiry (past 60 whole
  // seconds after `created`): a command that finds it gone hears "expired".
  const json rec = json::parse(sh("cat " + s.dir() + "/session.json"));
  const std::string ends = sh("podman inspect " + s.sandbox + " --format '{{index .Config.Labels \"io.lazyagent.session-ends\"}}'");
  INFO("created " << rec["created"] << ", sandbox ends " << ends);
  CHECK(std::stoll(ends) >= rec["created"].get<long long>() + 61);
  // Something running in it; then every process of ours is gone (each CLI call has exited).
  CHECK(s.exec("sleep 100000 >/dev/null 2>&1 & echo started")["exit_code"] == 0);
  REQUIRE(s.state() == "running\n");
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(wait_for([&] { return s.state().empty(); }, 120));
  const long secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 90);
  CHECK(sh("podman ps -a --filter label=io.lazyagent.run=" + s.id + " -q").empty());
  const CliResult late = s.run({"exec", "--", "true"});
  CHECK(late.exit_code == 2);
  CHECK(late.err.find("has expired") != std::string::npos);
  const CliResult r = run_cli(s.env, {"reap", "--json"});
  CHECK(json_out(r)["removed"].dump().find("session " + s.id) != std::string::npos);
  CHECK_FALSE(fs::exists(s.dir()));
}

TEST_CASE("reap removes an idle live session's sandbox with its copy", "[session][live]") {
  TempDir state, cfg;
  const std::string config = cfg.file("c.yaml", "seed: " + seed_dir() + "\nsessions:\n  idle_ttl_seconds: 10\n");
  Live s({state.path()}, {"--config", config});
  CHECK(s.exec("sleep 100000 >/dev/null 2>&1 &")["exit_code"] == 0);
  std::this_thread::sleep_for(std::chrono::seconds(12));
  const CliResult r = run_cli(s.env, {"reap", "--json"});
  INFO(r.out << r.err);
  CHECK(json_out(r)["removed"].dump().find("session " + s.id) != std::string::npos);
  CHECK(s.state().empty());
  CHECK_FALSE(fs::exists(s.dir()));
}

TEST_CASE("per-command sessions opened, used and closed over and over leave nothing and never fail on removal",
          "[session]") {
  TempDir state, cfg;
  const std::string config = cfg.file("c.yaml", "seed: " + seed_dir() + "\nsessions:\n  isolation: per-command\n");
  for (int round = 0; round < 50; ++round) {
    const CliResult o = run_cli({state.path()}, {"session", "open", "--config", config, "--json"}, 120);
    INFO("round " << round << ": " << o.err);
    REQUIRE(o.exit_code == 0);
    const json rec = json_out(o);
    CHECK(rec["isolation"] == "per-command");
    const std::string id = rec["session_id"];
    const CliResult e = run_cli({state.path()}, {"session", "exec", id, "--", "true"}, 120);
    INFO(e.err);
    CHECK(e.exit_code == 0);
    const CliResult c = run_cli({state.path()}, {"session", "close", id}, 120);
    CHECK(c.exit_code == 0);
    CHECK(sh("podman ps -a --filter name=lazyagent-sandbox-" + id + " -q").empty());
  }
}
