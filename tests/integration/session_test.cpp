// Sessions (pipeline/session.h) against the real podman service and the real
// CLI: an agent works the demo bug to a proven fix, commands run under the
// sandbox policy in containers that do not outlive them, the working copy is
// read back as hostile input, and nothing is left after close, kill -9 and reap.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"
#include "session_cli.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const char* const kFixed = kFixedCalculator;

// Checks the open's steps: per-command, one "==> copy" (the first
// command's); the working copy is "==> working copy" (issue 43).
struct Session : SessionCli {
  explicit Session(const CliEnv& e, std::vector<std::string> extra = {}) : SessionCli(e, std::move(extra)) {
    std::size_t copies = 0;
    for (auto at = opened.err.find("==> copy\n"); at != std::string::npos; at = opened.err.find("==> copy\n", at + 1)) ++copies;
    CHECK(copies == (record.at("isolation") == "per-command" ? 1u : 0u));
    CHECK(opened.err.find("==> working copy\n") != std::string::npos);
  }
};

// The containers of a session's commands (per-command: lazyagent-sandbox-<session>-<n>)
// and its live sandbox (lazyagent-session-<session>).
std::string session_containers(const std::string& id) {
  return sh("podman ps -a --filter name=lazyagent-sandbox-" + id + " --format '{{.Names}}'");
}
std::string live_sandbox(const std::string& id) {
  return sh("podman ps -a --filter name=lazyagent-session-" + id + " --format '{{.Names}}'");
}

// A config that keeps today's per-command isolation (sessions.isolation).
std::string per_command_config(const TempDir& dir, const std::string& more = "") {
  return dir.file("per-command.yaml", "seed: " + seed_dir() + "\nsessions:\n  isolation: per-command\n" + more);
}

bool wait_for_running(const std::string& id, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!sh("podman ps --filter name=lazyagent-sandbox-" + id + " --filter status=running -q").empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

TEST_CASE("a session works the demo bug to a proven fix, and close leaves nothing", "[session]") {
  TempDir state;
  Session s({state.path()});
  REQUIRE(fs::is_directory(s.dir() + "/work"));

  const json failing = s.exec("python3 -m unittest -v");
  CHECK(failing["exit_code"] == 1);
  CHECK(failing["output"].get<std::string>().find("FAILED") != std::string::npos);
  CHECK(failing["timed_out"] == false);
  CHECK(session_containers(s.id).empty());  // the command's container went with it

  TempDir io;
  const CliResult w = s.run({"write", "calculator.py", io.file("fix.py", kFixed)});
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  const CliResult rd = s.run({"read", "calculator.py"});
  CHECK(rd.out == kFixed);

  const json passing = s.exec("python3 -m unittest -v");
  CHECK(passing["exit_code"] == 0);
  CHECK(passing["output"].get<std::string>().find("OK") != std::string::npos);

  const CliResult d = s.run({"diff", "--json"});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  const json diff = json_out(d);
  CHECK(diff["changed_paths"] == json::array({"calculator.py"}));
  CHECK(diff["diff"].get<std::string>().find("+    return a + b") != std::string::npos);
  CHECK(diff["ok"] == true);

  // Proven and signed (docs/signing.md): the verdict is a DSSE envelope that
  // verifies offline against the session's diff and the seed.
  TempDir keys;
  const json key = json_out(run_cli(s.env, {"keygen", "--out", keys.path() + "/k", "--json"}));
  const CliResult p = s.run({"prove", "--json", "--sign-key", key["private_key"].get<std::string>()}, 300);
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json proven = json_out(p);
  CHECK(proven["tests_passed"] == true);
  CHECK(proven["changed_paths"] == json::array({"calculator.py"}));
  // The proven run is an ordinary one: `diff RUN_ID` prints its change.
  const CliResult rd2 = run_cli(s.env, {"diff", proven["run_id"].get<std::string>()});
  CHECK(rd2.out.find("+    return a + b") != std::string::npos);
  REQUIRE(proven["attestation"].is_object());
  CHECK(proven["attestation"]["keyid"] == key["keyid"]);
  const std::string envelope = proven["attestation"]["path"];
  const std::string diff_file = io.file("session.diff", diff["diff"].get<std::string>());
  const CliResult sv = run_cli(s.env, {"verify", "--key", key["public_key"].get<std::string>(), envelope, "--patch",
                                       diff_file, "--seed", seed_dir(), "--require-passed", "--json"});
  INFO(sv.out << sv.err);
  CHECK(sv.exit_code == 0);
  CHECK(json_out(sv)["checked"] == json{{"patch", true}, {"seed", true}});
  // Another patch is not what was proven.
  CHECK(run_cli(s.env, {"verify", "--key", key["public_key"].get<std::string>(), envelope, "--patch",
                        io.file("other.diff", diff["diff"].get<std::string>() + " ")})
            .exit_code == 1);
  CHECK(run_cli(s.env, {"attestation", proven["run_id"].get<std::string>()}).out == read_file(envelope));

  const json list = json::parse(run_cli(s.env, {"session", "list", "--json"}).out);
  REQUIRE(list.size() == 1);
  CHECK(list[0]["execs"] == 2);  // ours (live: the sandbox was verified and probed at open)
  CHECK_FALSE(live_sandbox(s.id).empty());

  const CliResult c = s.run({"close"});
  REQUIRE(c.exit_code == 0);
  CHECK_FALSE(fs::exists(s.dir()));
  CHECK(session_containers(s.id).empty());
  CHECK(live_sandbox(s.id).empty());
  CHECK(json::parse(run_cli(s.env, {"session", "list", "--json"}).out).empty());
  const CliResult again = s.run({"exec", "--", "true"});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("no open session " + s.id) != std::string::npos);
}

TEST_CASE("nothing a per-command session's command starts runs during the next command or after close", "[session]") {
  TempDir state, cfg;
  Session s({state.path()}, {"--config", per_command_config(cfg)});
  // A daemon that appends to the copy every 100 ms, detached from the command.
  const json started = s.exec("(while true; do echo tick >> ticks.txt; sleep 0.1; done) >/dev/null 2>&1 & "
                              "sleep 0.5; echo started");
  CHECK(started["exit_code"] == 0);
  CHECK(session_containers(s.id).empty());
  const std::string first = s.run({"read", "ticks.txt"}).out;
  REQUIRE_FALSE(first.empty());  // positive control: it ran while its command did
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK(s.run({"read", "ticks.txt"}).out == first);  // and not after
  const json next = s.exec("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done | grep -c 'sleep 0[.]1' || true");
  CHECK(next["output"].get<std::string>().rfind("0\n", 0) == 0);
  CHECK(s.run({"close"}).exit_code == 0);
  CHECK(session_containers(s.id).empty());
}

TEST_CASE("a session command has no network and none of the CLI's secrets", "[session][quick]") {
  TempDir state;
  CliEnv env{state.path(), {{"LAZYAGENT_TEST_SECRET", "s3cr3t-session-value-91"}}};
  Session s(env);
  const json r = s.exec(
      "cat /proc/net/dev; env; cat /proc/1/environ | tr '\\0' '\\n'; "
      "python3 -c \"import socket; s=socket.socket(); s.settimeout(3); s.connect(('10.88.0.1', 22))\" 2>&1 | tail -1");
  const std::string out = r["output"];
  CHECK(out.find("lo:") != std::string::npos);
  CHECK(out.find("eth0") == std::string::npos);
  CHECK(out.find("Network is unreachable") != std::string::npos);
  CHECK(out.find("s3cr3t-session-value-91") == std::string::npos);
  CHECK(out.find("LAZYAGENT_TEST_SECRET") == std::string::npos);
  CHECK(s.run({"close"}).exit_code == 0);
}

TEST_CASE("a symlink, a FIFO and a 1 GiB sparse file planted in the copy do not make read, diff or prove escape, hang or grow", "[session]") {
  TempDir state;
  Session s({state.path()});
  const json planted = s.exec(
      "ln -s /etc/passwd link.py && ln -s /etc etcdir && mkfifo fifo.py && truncate -s 1G big.bin && "
      "ln -sf /etc/passwd calculator.py && echo planted");
  REQUIRE(planted["exit_code"] == 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* path : {"link.py", "etcdir/passwd", "fifo.py", "big.bin", "calculator.py"}) {
    const CliResult r = s.run({"read", path}, 30);
    INFO(path << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.find("root:x:0:0") == std::string::npos);
  }
  const CliResult d = s.run({"diff", "--json"}, 60);
  CHECK(d.exit_code != 0);
  CHECK(d.out.find("root:x:0:0") == std::string::npos);
  CHECK(d.err.find("root:x:0:0") == std::string::npos);
  const CliResult p = s.run({"prove", "--json"}, 60);
  CHECK(p.exit_code != 0);
  CHECK(p.out.find("root:x:0:0") == std::string::npos);
  const long secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 60);
  struct rusage ru {};
  getrusage(RUSAGE_CHILDREN, &ru);
  CHECK(ru.ru_maxrss < 256 * 1024);  // KiB: no CLI held the 1 GiB file
  // Taken away, the copy diffs again: the links and the FIFO were the problem.
  CHECK(s.exec("rm -f link.py etcdir fifo.py big.bin calculator.py && echo 'def add(a, b):\n    return a + b' > calculator.py")["exit_code"] == 0);
  const CliResult d2 = s.run({"diff", "--json"}, 60);
  INFO(d2.err);
  CHECK(d2.exit_code == 0);
  CHECK(s.run({"close"}).exit_code == 0);
}

TEST_CASE("after kill -9 of the CLI mid-command, reap leaves no container and the per-command session goes on", "[session]") {
  TempDir state, cfg;
  Session s({state.path()}, {"--config", per_command_config(cfg)});
  TempDir io;
  const pid_t pid = spawn_cli(s.env, {"session", "exec", s.id, "--", "sleep 600"}, io.path());
  REQUIRE(wait_for_running(s.id, 60));
  kill(pid, SIGKILL);
  wait_cli(pid, 10);
  REQUIRE_FALSE(session_containers(s.id).empty());  // positive control: the command outlived its CLI
  const CliResult r = run_cli(s.env, {"reap", "--json"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(session_containers(s.id).empty());
  CHECK(s.exec("echo again")["exit_code"] == 0);
  CHECK(s.run({"close"}).exit_code == 0);
}

TEST_CASE("two sessions do not see each other's files, and reap closes an idle one", "[session]") {
  TempDir state, cfg;
  const std::string config = cfg.file("c.yaml", "seed: " + seed_dir() + "\nsessions:\n  idle_ttl_seconds: 10\n");
  Session a({state.path()});
  Session b({state.path()}, {"--config", config});
  CHECK(a.exec("echo mine > only_a.txt")["exit_code"] == 0);
  const json seen = b.exec("ls -a; ls -a .. /; cat ../*/only_a.txt /work/../*/only_a.txt 2>&1; test ! -e only_a.txt");
  CHECK(seen["exit_code"] == 0);
  CHECK(seen["output"].get<std::string>().find("mine") == std::string::npos);
  CHECK(seen["output"].get<std::string>().find(a.id) == std::string::npos);
  std::this_thread::sleep_for(std::chrono::seconds(12));
  const CliResult expired = b.run({"exec", "--", "true"});
  CHECK(expired.exit_code == 2);
  CHECK(expired.err.find("has expired") != std::string::npos);
  const CliResult r = run_cli(a.env, {"reap", "--json"});
  CHECK(json_out(r)["removed"].dump().find("session " + b.id) != std::string::npos);
  CHECK_FALSE(fs::exists(b.dir()));
  CHECK(live_sandbox(b.id).empty());
  CHECK_FALSE(live_sandbox(a.id).empty());
  CHECK(fs::exists(a.dir()));  // not idle long enough (the default TTL)
  CHECK(a.run({"close"}).exit_code == 0);
}

namespace {

// The loop devices backing `image` (the kernel's list in /sys/block), "" when none.
std::string loops_of(const std::string& image) {
  return sh("grep -lx '" + image + "' /sys/block/loop*/loop/backing_file 2>/dev/null || true");
}

bool mounted(const std::string& dir) {
  return sh("grep -c ' " + dir + " ' /proc/self/mountinfo 2>/dev/null || true") != "0\n";
}

}  // namespace

TEST_CASE("a session's working copy is capped: a command that fills it gets ENOSPC, not the host's disk", "[session]") {
  TempDir state, cfg;
  // Per-command: the umount below stands for a reboot, which a live session's sandbox does not outlive.
  const std::string config = per_command_config(cfg, "  disk_mib: 64\n  max_files: 2048\n");
  Session s({state.path()}, {"--config", config});
  const std::string image = s.dir() + "/work.img";
  REQUIRE(fs::exists(image));
  CHECK(mounted(s.dir() + "/work"));
  CHECK_FALSE(loops_of(image).empty());
  const json listed = json::parse(run_cli(s.env, {"session", "list", "--json"}).out);
  CHECK(listed.dump().find("\"disk_bytes\":67108864") != std::string::npos);

  // 200 MiB into a 64 MiB copy: the write stops at the cap, inside the sandbox.
  const json filled = s.exec("dd if=/dev/zero of=big.bin bs=1M count=200 2>&1; df -k /work | tail -1");
  CHECK(filled["exit_code"] == 0);  // df's exit: the dd's error is in the output
  const std::string out = filled["output"].get<std::string>();
  INFO(out);
  CHECK(out.find("No space left on device") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(image.c_str(), &st) == 0);
  CHECK(st.st_blocks * 512 <= 66 * 1024 * 1024);  // on the host: the image, at most its size
  // The file count is capped as well.
  const json many = s.exec("rm -f big.bin; i=0; exec 2>&1; while [ $i -lt 3000 ]; do true > f$i || exit 1; i=$((i+1)); done");
  CHECK(many["exit_code"] == 1);
  CHECK(many["output"].get<std::string>().find("No space left on device") != std::string::npos);
  CHECK(s.exec("rm -f f*; echo kept > kept.txt")["exit_code"] == 0);

  // A reboot unmounts it: the next command mounts the image again and finds its files.
  REQUIRE(sh("umount '" + s.dir() + "/work' && echo ok") == "ok\n");
  CHECK_FALSE(mounted(s.dir() + "/work"));
  const json after = s.exec("cat kept.txt");
  CHECK(after["output"].get<std::string>().find("kept") != std::string::npos);
  CHECK(mounted(s.dir() + "/work"));

  CHECK(s.run({"close"}).exit_code == 0);
  CHECK_FALSE(mounted(s.dir() + "/work"));
  CHECK(loops_of(image).empty());
  CHECK_FALSE(fs::exists(s.dir()));
}

TEST_CASE("a seed that does not fit the session's cap is refused at open, before any copy", "[session][quick]") {
  TempDir state, cfg, seed;
  fs::copy(seed_dir(), seed.path(), fs::copy_options::recursive);
  sh("head -c 20000000 /dev/zero > '" + seed.path() + "/data.bin'");
  const std::string config = cfg.file("c.yaml", "seed: " + seed.path() + "\nsessions:\n  disk_mib: 16\n");
  const CliResult r = run_cli({state.path()}, {"session", "open", "--config", config});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("raise sessions.disk_mib") != std::string::npos);
  CHECK(sh("ls '" + state.path() + "/lazyagent-oci/sessions' 2>/dev/null | wc -l") == "0\n");
}
