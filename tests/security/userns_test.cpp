// The sandbox's root is not the host's root (issue 6): it runs in a private
// user namespace whose ids are a high host range no host user has
// (user_namespace in config/lazyagent.yaml, default 1879048192 + 65536).
// Checked from both sides: the sandbox reads its own id maps, and the host
// kernel's view of the sandbox's processes (/proc/PID/status on the host) is
// read while it runs. A control shows the same host-side check sees uid 0 for
// a plain `podman run` container, so it would catch a sandbox that lost its
// user namespace.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

const std::string kHostId = "1879048192";

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The Uid: and Gid: lines of a host process, e.g. "Uid:\t0\t0\t0\t0".
std::string host_ids(const std::string& pid) {
  std::istringstream in(read_text("/proc/" + pid + "/status"));
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) == 0 || line.rfind("Gid:", 0) == 0) out += line + "\n";
  }
  return out;
}

// Waits for a running container carrying `label`; returns its host pid.
std::string running_pid(const std::string& label, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string pid = trim(sh("podman ps --filter label=" + label +
                                    " --filter status=running --format '{{.Pid}}' 2>/dev/null"));
    if (!pid.empty() && pid != "0" && pid.find('\n') == std::string::npos) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

}  // namespace

TEST_CASE("userns: the sandbox's root is a high, unused host id, seen from inside and from the host", "[userns][privilege]") {
  TempDir state, dir, io;
  const std::string patch = dir.file(
      "patch.json",
      attack_patch("import os, time\n"
                   "print('UIDMAP ' + ' '.join(open('/proc/self/uid_map').read().split()))\n"
                   "print('GIDMAP ' + ' '.join(open('/proc/self/gid_map').read().split()))\n"
                   "print('INSIDE uid=%d gid=%d' % (os.getuid(), os.getgid()))\n"
                   "st = os.stat('/seed/calculator.py')\n"
                   "print('SEED owner=%d' % st.st_uid)\n"
                   "time.sleep(4)  # the host reads /proc/PID/status meanwhile\n"));
  const pid_t cli = spawn_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--json"}, io.path());
  const std::string pid = running_pid("io.lazyagent.pid=" + std::to_string(cli), 60);
  const std::string ids = pid.empty() ? "" : host_ids(pid);
  const int code = wait_cli(cli, 120);
  const std::string stdout_text = read_text(io.path() + "/stdout");
  INFO("host pid " << pid << "\n" << ids << "\nstderr: " << read_text(io.path() + "/stderr"));
  REQUIRE(!pid.empty());
  CHECK(ids == "Uid:\t" + kHostId + "\t" + kHostId + "\t" + kHostId + "\t" + kHostId + "\n" +
                   "Gid:\t" + kHostId + "\t" + kHostId + "\t" + kHostId + "\t" + kHostId + "\n");
  json j = json::parse(stdout_text, nullptr, false);
  REQUIRE(j.is_object());
  const std::string out = j["test_output"].get<std::string>();
  INFO(out);
  CHECK(out.find("UIDMAP 0 " + kHostId + " 65536\n") != std::string::npos);
  CHECK(out.find("GIDMAP 0 " + kHostId + " 65536\n") != std::string::npos);
  CHECK(out.find("INSIDE uid=0 gid=0\n") != std::string::npos);  // root inside, nobody outside
  CHECK(out.find("SEED owner=0\n") != std::string::npos);         // its copy is its own
  CHECK(j["policy"]["user"]["mode"] == "user_namespace");
  CHECK(j["policy"]["user"]["uid_map"][0]["host_id"] == 1879048192LL);
  CHECK(j["tests_passed"] == true);
  CHECK(code == 0);
}

TEST_CASE("userns control: a container without a user namespace is host uid 0, and the check sees it", "[userns][privilege][control][quick]") {
  const std::string name = "lazyagent-userns-control-" + std::to_string(getpid());
  const std::string id = trim(sh("podman run -d --rm --name " + name +
                                 " --label io.lazyagent.test=userns --network none --cap-drop ALL "
                                 "localhost/lazyagent-sandbox:latest sh -c 'cat /proc/self/uid_map; sleep 30' 2>&1"));
  const std::string pid = running_pid("io.lazyagent.test=userns", 30);
  const std::string ids = pid.empty() ? "" : host_ids(pid);
  const std::string map = sh("podman logs " + name + " 2>&1");
  sh("podman rm -f -t 0 " + name + " >/dev/null 2>&1");
  INFO(id << "\n" << ids << map);
  REQUIRE(!pid.empty());
  CHECK(ids == "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n");
  CHECK(map.find("4294967295") != std::string::npos);  // the identity map: host root
}

TEST_CASE("userns: a seed with owner-only files stays readable to the sandbox, the user's files untouched", "[userns][works][quick]") {
  TempDir state, seed, dir;
  for (const char* f : {"calculator.py", "test_calculator.py"}) {
    seed.file(f, read_text(seed_dir() + "/" + f));
    ::chmod((seed.path() + "/" + f).c_str(), 0600);
  }
  const std::string before = hash_tree(seed.path());
  struct stat st_before {};
  ::stat((seed.path() + "/calculator.py").c_str(), &st_before);
  const std::string patch = dir.file("patch.json", fixing_patch());
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed.path(), "--patch", patch, "--json"});
  INFO(r.err << r.out.substr(0, 3000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["tests_passed"] == true);  // test_calculator.py (0600) was read through /seed
  CHECK(r.exit_code == 0);
  CHECK(hash_tree(seed.path()) == before);
  struct stat st_after {};
  ::stat((seed.path() + "/calculator.py").c_str(), &st_after);
  CHECK(st_after.st_uid == st_before.st_uid);  // only the private copy was given away
}
