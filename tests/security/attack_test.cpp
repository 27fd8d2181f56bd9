// Attacks on the sandbox (ARCHITECTURE section 3). Each patch runs hostile
// code at import time, prints what it achieved, then lets the tests run.
// Every attack would succeed if its invariant broke; the network attack is
// also run once with the isolation removed (plain `podman run --network host`)
// to prove the probe itself can detect a breach.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "attack_common.h"
#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

json run_attack(const CliEnv& env, const std::string& prelude, std::vector<std::string> extra = {}) {
  TempDir dir;
  const std::string p = dir.file("patch.json", attack_patch(prelude));
  std::vector<std::string> args = {"test", "--seed", seed_dir(), "--patch", p, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult r = run_cli(env, args);
  INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 4000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("test_output"));
  j["_exit"] = r.exit_code;
  return j;
}

std::string output(const json& j) { return j["test_output"].get<std::string>(); }

std::string network_probe(int port) {
  return "import socket, os\n"
         "print('IFACES=' + ','.join(sorted(os.listdir('/sys/class/net'))))\n"
         "for host in ('127.0.0.1', 'host.containers.internal'):\n"
         "    try:\n"
         "        socket.create_connection((host, " + std::to_string(port) + "), timeout=2).close()\n"
         "        print('CONNECTED ' + host)\n"
         "    except Exception as e:\n"
         "        print('BLOCKED ' + host + ' ' + type(e).__name__)\n"
         "try:\n"
         "    socket.getaddrinfo('" + debian_mirror_host() + "', 80)\n"
         "    print('DNS RESOLVED')\n"
         "except Exception as e:\n"
         "    print('DNS BLOCKED ' + type(e).__name__)\n";
}

}  // namespace

TEST_CASE("attack: reach the network", "[attack][network][quick]") {
  TempDir state;
  HostListener listener;
  json j = run_attack({state.path()}, network_probe(listener.port()));
  const std::string out = output(j);
  INFO(out);
  CHECK(out.find("IFACES=lo\n") != std::string::npos);
  CHECK(out.find("CONNECTED") == std::string::npos);
  CHECK(out.find("BLOCKED 127.0.0.1") != std::string::npos);
  CHECK(out.find("DNS BLOCKED") != std::string::npos);
  CHECK(listener.accepted() == 0);
  CHECK(j["tests_passed"] == true);  // the fix itself is fine: only the attack failed
  sec::evidence("host listener connections: " + std::to_string(listener.accepted()) + "\n" + sec::lines_with(out, "IFACES") +
                "\n" + sec::lines_with(out, "BLOCKED") + "\n" + sec::lines_with(out, "DNS"));
}

TEST_CASE("attack control: the same probe without isolation does reach the host", "[attack][network][control][quick]") {
  HostListener listener;
  TempDir dir;
  dir.file("probe.py", network_probe(listener.port()));
  const std::string out = sh("podman run --rm --network host -v " + dir.path() +
                             ":/p:ro,z localhost/lazyagent-sandbox:latest python3 /p/probe.py 2>&1");
  INFO(out);
  CHECK(out.find("CONNECTED 127.0.0.1") != std::string::npos);
  CHECK(listener.accepted() >= 1);
  sec::evidence("control (--network host): connections " + std::to_string(listener.accepted()) + "\n" +
                sec::lines_with(out, "CONNECTED"));
}

TEST_CASE("attack: read the CLI's environment and secrets", "[attack][secrets][quick]") {
  TempDir state;
  const std::string secret = "sk-lazyagent-it-" + std::to_string(getpid()) + "-f00d";
  CliEnv env{state.path(), {{"CODING_AGENT_API_KEY", secret}, {"AWS_SECRET_ACCESS_KEY", secret}}};
  json j = run_attack(env,
                      "import os, glob\n"
                      "print('ENVNAMES=' + ','.join(sorted(os.environ)))\n"
                      "blob = ''\n"
                      "for p in glob.glob('/proc/*/environ') + glob.glob('/run/secrets/*') + ['/proc/1/cmdline']:\n"
                      "    try: blob += open(p, 'rb').read().decode('latin-1')\n"
                      "    except Exception: pass\n"
                      "print('SECRET_FOUND' if 'sk-lazyagent-it' in blob else 'NO_SECRET')\n"
                      "print('RUN_SECRETS=' + str(os.path.exists('/run/secrets')))\n");
  const std::string out = output(j);
  INFO(out);
  CHECK(out.find("ENVNAMES=HOME,HOSTNAME,LANG,OLDPWD,PATH,PWD,PYTHONDONTWRITEBYTECODE,PYTHONUNBUFFERED,TMPDIR\n") != std::string::npos);
  CHECK(out.find("NO_SECRET") != std::string::npos);
  CHECK(out.find("RUN_SECRETS=False") != std::string::npos);
  CHECK(j.dump().find(secret) == std::string::npos);
  sec::evidence(sec::lines_with(out, "ENVNAMES") + "\n" + sec::lines_with(out, "NO_SECRET") + sec::lines_with(out, "SECRET_FOUND") +
                "\n" + sec::lines_with(out, "RUN_SECRETS"));
}

TEST_CASE("attack: write outside the working copy", "[attack][filesystem][quick]") {
  TempDir state;
  const std::string before = hash_tree(seed_dir());
  json j = run_attack({state.path()},
                      "import os\n"
                      "for p in ('/etc/pwned', '/usr/pwned', '/seed/pwned', '/seed/test_calculator.py', '/pwned', '/proc/self/root/etc/pwned'):\n"
                      "    try:\n"
                      "        open(p, 'w').write('x')\n"
                      "        print('WROTE ' + p)\n"
                      "    except OSError as e:\n"
                      "        print('DENIED ' + p + ' ' + str(e.errno))\n"
                      "open('/work/ok.txt', 'w').write('fine')\n"
                      "print('WORK_WRITABLE')\n");
  const std::string out = output(j);
  INFO(out);
  CHECK(out.find("WROTE") == std::string::npos);
  CHECK(out.find("DENIED /etc/pwned 30") != std::string::npos);  // EROFS
  CHECK(out.find("DENIED /seed/test_calculator.py 30") != std::string::npos);
  CHECK(out.find("WORK_WRITABLE") != std::string::npos);
  CHECK(hash_tree(seed_dir()) == before);
  sec::evidence(sec::lines_with(out, "DENIED") + sec::lines_with(out, "WROTE") + "\nseed unchanged: " +
                (hash_tree(seed_dir()) == before ? "yes" : "NO"));
}

TEST_CASE("attack: fill the disk", "[attack][exhaustion][quick]") {
  TempDir state;
  json j = run_attack({state.path()},
                      "import os\n"
                      "for d in ('/work', '/tmp'):\n"
                      "    n = 0\n"
                      "    try:\n"
                      "        with open(d + '/fill', 'wb') as f:\n"
                      "            for _ in range(200):\n"
                      "                f.write(b'x' * (1 << 20)); f.flush(); n += 1\n"
                      "    except OSError as e:\n"
                      "        pass\n"
                      "    print('FILLED %s %d MiB' % (d, n))\n"
                      "    os.remove(d + '/fill')\n");
  const std::string out = output(j);
  INFO(out);
  CHECK(out.find("FILLED /work 6") != std::string::npos);  // stopped at the 64 MiB cap
  CHECK(out.find("FILLED /tmp 6") != std::string::npos);
  sec::evidence(sec::lines_with(out, "FILLED"));
}

TEST_CASE("attack: fork without bound", "[attack][exhaustion]") {
  TempDir state;
  json j = run_attack({state.path()},
                      "import os, time\n"
                      "kids = 0\n"
                      "try:\n"
                      "    for _ in range(2000):\n"
                      "        if os.fork() == 0:\n"
                      "            time.sleep(30); os._exit(0)\n"
                      "        kids += 1\n"
                      "except OSError as e:\n"
                      "    print('FORK STOPPED errno=%d' % e.errno)\n"
                      "print('FORKED %d' % kids)\n"
                      "os._exit(3)\n",
                      {"--timeout", "20"});
  const std::string out = output(j);
  INFO(out);
  CHECK(out.find("FORK STOPPED errno=11") != std::string::npos);  // EAGAIN
  const auto pos = out.find("FORKED ");
  REQUIRE(pos != std::string::npos);
  CHECK(std::stoi(out.substr(pos + 7)) < 256);
  CHECK(j["tests_passed"] == false);
  sec::evidence(sec::lines_with(out, "FORK STOPPED") + ", " + sec::lines_with(out, "FORKED"));
}

TEST_CASE("attack: allocate without bound", "[attack][exhaustion]") {
  TempDir state;
  json j = run_attack({state.path()},
                      "blocks = []\n"
                      "for i in range(2048):\n"
                      "    blocks.append(bytearray(1 << 20))\n"
                      "    if i % 256 == 0: print('ALLOCATED %d MiB' % i, flush=True)\n"
                      "print('ALLOCATED ALL 2 GiB')\n");
  const std::string out = output(j);
  INFO(out);
  CHECK(out.find("ALLOCATED ALL") == std::string::npos);
  CHECK(j["tests_passed"] == false);
  CHECK(j["test_exit_code"] == 137);
  CHECK(j["reason"] == "killed: the test process got SIGKILL (exit 137), usually the memory limit");
  sec::evidence(sec::lines_with(out, "ALLOCATED") + "\nexit " + std::to_string(j["test_exit_code"].get<int>()) + ": " +
                j["reason"].get<std::string>());
}

TEST_CASE("attack: flood stdout", "[attack][exhaustion][quick]") {
  TempDir state;
  json j = run_attack({state.path()},
                      "import sys\n"
                      "chunk = 'A' * 65535 + '\\n'\n"
                      "for _ in range(800): sys.stdout.write(chunk)\n"  // ~50 MiB
                      "sys.stdout.flush()\n");
  const std::string out = output(j);
  CHECK(out.size() < (1 << 20) + 200);
  CHECK(j["test_output_truncated"] == true);
  CHECK(out.find("[lazyagent-oci: output cut: kept the first 983040 and the last 65536 bytes]") != std::string::npos);
  CHECK(j["tests_passed"] == true);  // the runner's report survived the cut
  sec::evidence("~50 MiB on stdout: kept " + std::to_string(out.size()) + " bytes, truncated=true, verdict still read");
}

TEST_CASE("attack: terminal escape sequences in output", "[attack][terminal][quick]") {
  TempDir state, dir;
  const std::string p = dir.file("patch.json", attack_patch(
      "print('\\x1b]0;pwned-title\\x07\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07EVIL\\rOK \\u202e', flush=True)\n"));
  CliResult human = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p});
  INFO(human.out);
  CHECK(human.exit_code == 0);
  CHECK(human.out.find('\x1b') == std::string::npos);
  CHECK(human.out.find('\r') == std::string::npos);
  CHECK(human.out.find("\\x1b]0;pwned-title\\x07") != std::string::npos);
  CHECK(human.out.find("EVIL\\rOK \\u{202e}") != std::string::npos);
  CHECK(human.err.find('\x1b') == std::string::npos);
  sec::evidence("terminal shows: " + sec::lines_with(human.out, "\\x1b]0;pwned-title"));
}
