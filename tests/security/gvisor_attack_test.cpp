// The network attack again, inside gVisor (`--runtime runsc`): the sandbox
// must still find only lo and reach nothing. gVisor's sysfs may refuse
// /sys/class/net, so the attack also asks the kernel (if_nameindex,
// /proc/net/dev); the isolation probe must judge the run clean.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

std::string attack(int port) {
  return "import socket\n"
         "print('IFACES=' + ','.join(sorted(n for _, n in socket.if_nameindex())))\n"
         "print('NETDEV=' + ','.join(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev') if ':' in l)))\n"
         "for host in ('127.0.0.1', 'host.containers.internal', '10.88.0.1'):\n"
         "    try:\n"
         "        socket.create_connection((host, " + std::to_string(port) + "), timeout=2).close()\n"
         "        print('CONNECTED ' + host)\n"
         "    except Exception as e:\n"
         "        print('BLOCKED ' + host + ' ' + type(e).__name__)\n";
}

}  // namespace

TEST_CASE("attack under gVisor: reach the network", "[attack][gvisor]") {
  TempDir state, dir;
  HostListener listener;
  const std::string p = dir.file("patch.json", attack_patch(attack(listener.port())));
  const std::string c = dir.file("config.yaml", "engine:\n  runtime: runsc\n");
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--config", c, "--json"});
  INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 4000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("test_output"));
  const std::string out = j["test_output"];
  CHECK(j["policy"]["runtime"] == "runsc");
  CHECK(out.find("IFACES=lo\n") != std::string::npos);
  CHECK(out.find("NETDEV=lo\n") != std::string::npos);
  CHECK(out.find("CONNECTED") == std::string::npos);
  CHECK(out.find("BLOCKED 127.0.0.1") != std::string::npos);
  CHECK(listener.accepted() == 0);
  CHECK(j["isolation_probe"]["netdev"] == json::array({"lo"}));
  CHECK(j["isolation_probe"]["violations"].empty());
  CHECK(j["tests_passed"] == true);
  CHECK(r.exit_code == 0);
}

// The policy's `not_enforced` must be the truth in both directions: under
// runsc a 256 MiB allocation passes a 64 MiB limit (so "memory" is listed as
// not enforced), under runc the same code is killed (so it is not).
TEST_CASE("attack under gVisor: allocate past the memory limit, which the policy says is not enforced",
          "[attack][gvisor]") {
  const std::string hog = "big = b'\\x01' * (256 << 20)\nprint('ALLOCATED', len(big) >> 20, 'MiB')\ndel big\n";
  auto run = [&](const std::string& runtime) {
    TempDir state, dir;
    const std::string p = dir.file("patch.json", attack_patch(hog));
    const std::string c = dir.file("config.yaml", "engine:\n  runtime: " + runtime +
                                                      "\n  accept_weaker_policy: true\nlimits:\n  memory_mib: 64\n");
    CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--config", c, "--json"});
    INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 4000));
    json j = json::parse(r.out, nullptr, false);
    REQUIRE(j.is_object());
    REQUIRE(j.contains("policy"));
    j["_exit"] = r.exit_code;
    return j;
  };
  const json gvisor = run("runsc");
  INFO(gvisor.dump(2).substr(0, 3000));
  CHECK(gvisor["test_output"].get<std::string>().find("ALLOCATED 256 MiB") != std::string::npos);
  CHECK(gvisor["policy"]["memory_bytes"] == 64LL << 20);
  const auto& ne = gvisor["policy"]["not_enforced"];
  CHECK(std::find(ne.begin(), ne.end(), "memory") != ne.end());
  CHECK(gvisor["_exit"] == 0);

  const json runc = run("runc");
  INFO(runc.dump(2).substr(0, 3000));
  CHECK(runc["test_output"].get<std::string>().find("ALLOCATED") == std::string::npos);
  CHECK(runc["test_exit_code"] == 137);
  CHECK(runc["policy"]["not_enforced"].empty());
  CHECK(runc["_exit"] == 1);
}

// What the policy lists as enforced under runsc must hold: the size-capped
// tmpfs, noexec on /tmp, RLIMIT_NPROC and RLIMIT_NOFILE (defaults: 64 MiB,
// 256 processes, 1024 files), each attacked from inside gVisor.
TEST_CASE("attack under gVisor: fill the disk, exec from /tmp, fork and open without bound", "[attack][gvisor]") {
  const std::string prelude =
      "import os, shutil, errno\n"
      "try:\n"
      "    with open('/tmp/fill', 'wb') as f:\n"
      "        for _ in range(100): f.write(b'x' * (1 << 20))\n"
      "    print('DISK UNBOUNDED')\n"
      "except OSError as e:\n"
      "    print('DISK BOUNDED ' + errno.errorcode.get(e.errno, '?'))\n"
      "os.remove('/tmp/fill')\n"
      "shutil.copy('/bin/true', '/tmp/t'); os.chmod('/tmp/t', 0o755)\n"
      "try:\n"
      "    os.execv('/tmp/t', ['/tmp/t'])\n"
      "except OSError as e:\n"
      "    print('EXEC BLOCKED ' + errno.errorcode.get(e.errno, '?'))\n"
      "kids = []\n"
      "try:\n"
      "    for _ in range(400):\n"
      "        pid = os.fork()\n"
      "        if pid == 0:\n"
      "            import time; time.sleep(5); os._exit(0)\n"
      "        kids.append(pid)\n"
      "    print('FORK UNBOUNDED')\n"
      "except OSError as e:\n"
      "    print('FORK BOUNDED %d' % len(kids))\n"
      "for k in kids: os.kill(k, 9); os.waitpid(k, 0)\n"
      "fds = []\n"
      "try:\n"
      "    for _ in range(2000): fds.append(os.open('/dev/null', os.O_RDONLY))\n"
      "    print('FILES UNBOUNDED')\n"
      "except OSError as e:\n"
      "    print('FILES BOUNDED %d' % len(fds))\n"
      "for fd in fds: os.close(fd)\n";
  TempDir state, dir;
  const std::string p = dir.file("patch.json", attack_patch(prelude));
  const std::string c = dir.file("config.yaml", "engine:\n  runtime: runsc\n");
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--config", c, "--json"});
  INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 4000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("test_output"));
  const std::string out = j["test_output"];
  CHECK(j["policy"]["runtime"] == "runsc");
  CHECK(out.find("DISK BOUNDED ENOSPC") != std::string::npos);
  CHECK(out.find("EXEC BLOCKED EACCES") != std::string::npos);
  CHECK(out.find("FORK BOUNDED") != std::string::npos);
  CHECK(out.find("FILES BOUNDED") != std::string::npos);
  CHECK(out.find("UNBOUNDED") == std::string::npos);
  CHECK(j["tests_passed"] == true);
}
