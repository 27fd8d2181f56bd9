// gVisor (`--runtime runsc`) end to end: the real CLI, the runsc podman
// service ($LAZYAGENT_RUNSC_HOST, else /run/podman/lazyagent-runsc.sock, as
// scripts/setup.sh starts it), the real sandbox image.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <map>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

using Run = TestRun;

// A config without limits: it demands nothing runsc cannot enforce.
const char* kRunscConfig = "engine:\n  runtime: runsc\n";

const json kNotEnforced = json::array({"memory", "pids", "cpu", "masked_paths", "user_namespace"});

}  // namespace

TEST_CASE("runsc: a fixing patch passes, a wrong one fails, and the policy says what gVisor does not enforce",
          "[gvisor]") {
  TempDir state;
  // The prelude prints the kernel the code under test sees (gVisor's own),
  // and asks it directly for no_new_privs and the seccomp mode, which
  // gVisor's /proc/self/status does not (fully) show.
  Run fix = test_patch({state.path()},
                       attack_patch("import ctypes\n"
                                    "print('KERNEL=' + open('/proc/version').read().split()[2])\n"
                                    "libc = ctypes.CDLL(None)\n"
                                    "print('NNP=%d SECCOMP=%d' % (libc.prctl(39, 0, 0, 0, 0), libc.prctl(21, 0, 0, 0, 0)))"),
                       {}, kRunscConfig);
  INFO(fix.cli.err << fix.result.dump(2));
  CHECK(fix.cli.exit_code == 0);
  CHECK(fix.result["tests_passed"] == true);
  CHECK(fix.result["test_output"].get<std::string>().find("Ran 4 tests") != std::string::npos);
  const std::string host_kernel = sh("uname -r");
  CHECK(fix.result["test_output"].get<std::string>().find("KERNEL=" + host_kernel) == std::string::npos);
  CHECK(fix.result["test_output"].get<std::string>().find("KERNEL=4.4.0\n") != std::string::npos);
  CHECK(fix.result["test_output"].get<std::string>().find("NNP=1 SECCOMP=2\n") != std::string::npos);
  const json& pol = fix.result["policy"];
  CHECK(pol["runtime"] == "runsc");
  CHECK(pol["not_enforced"] == kNotEnforced);
  CHECK(pol["user"]["mode"] == "gvisor");  // no id mapping under runsc (sandbox_policy.h)
  for (const char* item : {"network", "capabilities", "seccomp", "nofile", "nproc", "tmpfs_size"}) {
    CHECK(std::find(pol["enforced"].begin(), pol["enforced"].end(), item) != pol["enforced"].end());
  }
  CHECK(pol["weaker_policy_accepted"] == false);
  // The probe inside judged gVisor by what gVisor shows.
  const json& probe = fix.result["isolation_probe"];
  CHECK(probe["violations"].empty());
  CHECK(probe["netdev"] == json::array({"lo"}));
  CHECK(probe["seccomp"] == "2");
  CHECK(probe["no_new_privs"].is_null());
  CHECK(probe["not_observable"][0] == "no_new_privs (not reported in /proc/self/status)");
  CHECK(container_gone(fix.result["sandbox_id"]));

  Run wrong = test_patch({state.path()}, wrong_patch(), {}, kRunscConfig);
  CHECK(wrong.cli.exit_code == 1);
  CHECK(wrong.result["tests_passed"] == false);
  CHECK(wrong.result["reason"].get<std::string>().rfind("tests failed: the test command exited 1", 0) == 0);
  CHECK(wrong.result["policy"]["not_enforced"] == kNotEnforced);
  CHECK(container_gone(wrong.result["sandbox_id"]));

  // The same patch under runc: everything enforced.
  Run runc = test_patch({state.path()}, fixing_patch(), {}, "engine:\n  runtime: runc\n");
  CHECK(runc.cli.exit_code == 0);
  CHECK(runc.result["policy"]["runtime"] == "runc");
  CHECK(runc.result["policy"]["not_enforced"].empty());
}

// select() and posix_spawn() under the sandbox's profile: runsc reads the
// profile by its own syscall names (policy/gvisor_seccomp.h). With the
// profile as runc reads it both failed with EPERM under runsc, and a correct
// patch failed (cmake, make and pytest's helpers use them). The calls the
// profile refuses stay refused under both runtimes.
TEST_CASE("runsc: select() and posix_spawn() work as under runc, and the refused calls stay refused",
          "[gvisor]") {
  const std::string prelude =
      "import ctypes, os, select, subprocess\n"
      "print('SELECT', select.select([], [], [], 0.01))\n"
      "pid = os.posix_spawn('/bin/true', ['true'], {})\n"
      "print('SPAWN', os.waitpid(pid, 0)[1])\n"
      "print('SUBPROCESS', subprocess.run(['/bin/echo', 'child'], capture_output=True).stdout)\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "def call(name, nr, *args):\n"
      "    r = libc.syscall(nr, *args)\n"
      "    print('CALL %s %d %d' % (name, r, ctypes.get_errno() if r < 0 else 0))\n"
      "call('clone3', 435, 0, 0)\n"
      "call('unshare', 272, 0x10000000)\n"  // CLONE_NEWUSER
      "call('keyctl', 250, 0, 0)\n"
      "call('mount', 165, 0, 0, 0, 0, 0)\n"
      "call('io_uring_setup', 425, 0, 0)\n"
      "call('getpmsg', 181, 0, 0)\n";
  auto run = [&](const std::string& runtime) {
    TempDir state;
    Run r = test_patch({state.path()}, attack_patch(prelude), {}, "engine:\n  runtime: " + runtime + "\n");
    INFO(runtime << ": " << r.cli.err << r.result.dump(2).substr(0, 4000));
    CHECK(r.cli.exit_code == 0);
    CHECK(r.result["tests_passed"] == true);
    CHECK(container_gone(r.result["sandbox_id"]));
    return r.result["test_output"].get<std::string>();
  };
  for (const std::string runtime : {"runsc", "runc"}) {
    const std::string out = run(runtime);
    INFO(runtime << ":\n" << out);
    CHECK(out.find("SELECT ([], [], [])\n") != std::string::npos);
    CHECK(out.find("SPAWN 0\n") != std::string::npos);
    CHECK(out.find("SUBPROCESS b'child\\n'\n") != std::string::npos);
    CHECK(out.find("CALL clone3 -1 38\n") != std::string::npos);  // ENOSYS: glibc falls back to clone
    CHECK(out.find("CALL unshare -1 1\n") != std::string::npos);  // EPERM
    CHECK(out.find("CALL keyctl -1 1\n") != std::string::npos);
    CHECK(out.find("CALL mount -1 1\n") != std::string::npos);
    // Refused either way; this runsc answers every refusal EPERM, whatever
    // errno the profile names (docs/gvisor.md says so): io_uring's ENOSYS rule,
    // and getpmsg, which no rule names (the default action, ENOSYS).
    const std::string enosys = runtime == "runc" ? "38" : "1";
    CHECK(out.find("CALL io_uring_setup -1 " + enosys + "\n") != std::string::npos);
    CHECK(out.find("CALL getpmsg -1 " + enosys + "\n") != std::string::npos);
  }
}

TEST_CASE("runsc: a config demanding a memory limit is refused unless the weaker policy is accepted", "[gvisor]") {
  TempDir state;
  const std::string demanding = std::string(kRunscConfig) + "limits:\n  memory_mib: 256\n";
  Run refused = test_patch({state.path()}, fixing_patch(), {}, demanding);
  CHECK(refused.cli.exit_code == 2);
  CHECK(refused.result["error_kind"] == "usage");
  const std::string msg = refused.result["error"];
  CHECK(msg.find("demands limits.memory_mib (memory), which runsc does not enforce on this host") != std::string::npos);
  CHECK(msg.find("--accept-weaker-policy") != std::string::npos);
  // Refused before the pipeline starts: no run record, hence no container.
  CHECK(sh("ls -A " + state.path() + "/lazyagent-oci/runs 2>/dev/null") == "");

  Run accepted = test_patch({state.path()}, fixing_patch(), {"--accept-weaker-policy"}, demanding);
  CHECK(accepted.cli.exit_code == 0);
  CHECK(accepted.result["tests_passed"] == true);
  CHECK(accepted.result["policy"]["memory_bytes"] == 256LL << 20);
  CHECK(accepted.result["policy"]["not_enforced"] == kNotEnforced);
  CHECK(accepted.result["policy"]["weaker_policy_accepted"] == true);

  Run by_config_ok = test_patch({state.path()}, fixing_patch(), {},
                                "engine:\n  runtime: runsc\n  accept_weaker_policy: true\nlimits:\n  memory_mib: 256\n");
  CHECK(by_config_ok.cli.exit_code == 0);
  CHECK(by_config_ok.result["policy"]["weaker_policy_accepted"] == true);

  // The shipped config sets every limit: each unenforceable one is named.
  TempDir dir;
  const std::string p = dir.file("patch.json", fixing_patch());
  CliResult shipped = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--runtime", "runsc"});
  CHECK(shipped.exit_code == 2);
  CHECK(shipped.err.find("demands limits.memory_mib (memory), limits.pids (pids), limits.cpus (cpu), which runsc") !=
        std::string::npos);
}

TEST_CASE("runtimes: a service that does not answer is an engine error, one that runs another runtime than the "
          "config's a config error (exit 2, no retry), each saying what to do",
          "[gvisor][quick]") {
  TempDir state, dir;
  const std::string p = dir.file("patch.json", fixing_patch());
  const std::string c = dir.file("config.yaml", kRunscConfig);
  const std::string nowhere = dir.path() + "/nobody.sock";
  CliResult dead = run_cli({state.path(), {{"LAZYAGENT_RUNSC_HOST", "unix://" + nowhere}}},
                           {"test", "--seed", seed_dir(), "--patch", p, "--config", c});
  CHECK(dead.exit_code == 5);
  CHECK(dead.err.find("the podman service for runsc does not answer on " + nowhere) != std::string::npos);
  CHECK(dead.err.find("podman --runtime runsc --runtime-flag network=none --runtime-flag ignore-cgroups") !=
        std::string::npos);

  CliResult unknown = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--runtime", "kata"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err == "lazyagent-oci: --runtime kata: expected runc, crun or runsc\n");

  // crun asked of this host's runc service: refused at the engine's check,
  // before any copy or container, as a configuration fact (not an
  // infra_error a retry would repeat). Where the service runs crun, it is
  // taken unasked (scripts/vm.sh's Debian 13 host).
  CliResult crun = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--runtime", "crun", "--json"});
  INFO(crun.out << crun.err);
  CHECK(crun.exit_code == 2);
  CHECK(crun.err.find("runs OCI runtime 'runc', not 'crun' (engine.runtime or --runtime): drop the setting") !=
        std::string::npos);
  CHECK(crun.err.find("retry") == std::string::npos);

  // The runc service behind the runsc socket: refused before any container.
  const char* ch = std::getenv("CONTAINER_HOST");
  const std::string runc_sock = ch && std::string(ch).rfind("unix://", 0) == 0 ? ch : "unix:///run/podman/podman.sock";
  CliResult other = run_cli({state.path(), {{"LAZYAGENT_RUNSC_HOST", runc_sock}}},
                            {"test", "--seed", seed_dir(), "--patch", p, "--config", c});
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("runs OCI runtime 'runc', not 'runsc'") != std::string::npos);
}

TEST_CASE("doctor checks the runsc service", "[gvisor]") {
  TempDir state, nosock;
  CliResult r = run_cli({state.path()}, {"doctor", "--json"});
  INFO(r.out << r.err);
  std::map<std::string, json> by_name;
  const json doc = json::parse(r.out);
  for (const auto& c : doc["checks"]) by_name[c["check"].get<std::string>()] = c;
  CHECK(by_name["runsc"]["status"] == "ok");
  CHECK(by_name["runtime"]["status"] == "ok");
  // Not answering: a warning when runc is configured (nothing needs it)...
  const std::map<std::string, std::string> dead = {{"LAZYAGENT_RUNSC_HOST", "unix://" + nosock.path() + "/x.sock"}};
  CliResult warn = run_cli({state.path(), dead}, {"doctor", "--json"});
  CHECK(warn.exit_code == 0);
  const json warned = json::parse(warn.out);
  REQUIRE(warned["checks"].size() == doc["checks"].size());
  for (const auto& c : warned["checks"]) {
    if (c["check"] == "runsc") CHECK(c["status"] == "warn");
  }
  // ...a failure when the config asks for runsc.
  const std::string cfg = nosock.file("c.yaml", "engine:\n  runtime: runsc\n");
  CliResult fail = run_cli({state.path(), dead}, {"doctor", "--config", cfg});
  CHECK(fail.exit_code == 5);
  CHECK(fail.out.find("[FAIL] runsc: ") != std::string::npos);
}
