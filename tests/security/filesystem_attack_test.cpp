// Invariants 3 and 5: no mounts but podman's standard ones and the ephemeral
// seed copy; the user's seed is never modified; nothing from the sandbox is
// written back to the host. Beyond attack_test.cpp's direct writes: symlink
// and /proc tricks from inside, the mount table as the sandbox sees it, a
// hostile seed whose allowed path is a symlink out of it, and files left for
// the next run.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "attack_common.h"

using nlohmann::json;
using namespace it;
using namespace sec;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> tree_names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("attack: symlinks and /proc paths out of /work", "[attack][filesystem][quick]") {
  TempDir state;
  const std::string before = hash_tree(seed_dir());
  json j = run_attack({state.path()},
                      "import os\n"
                      "def attempt(name, fn):\n"
                      "    try:\n"
                      "        fn(); print('ESCAPED ' + name)\n"
                      "    except OSError as e:\n"
                      "        print('DENIED %s errno=%d' % (name, e.errno))\n"
                      "os.symlink('/', '/work/rootlink')\n"
                      "os.symlink('/seed/test_calculator.py', '/work/seedlink')\n"
                      "os.symlink('/proc/1/root/usr', '/work/usrlink')\n"
                      "attempt('write via /work/rootlink/etc', lambda: open('/work/rootlink/etc/pwned', 'w').write('x'))\n"
                      "attempt('write via /work/seedlink', lambda: open('/work/seedlink', 'a').write('x'))\n"
                      "attempt('write via /work/usrlink', lambda: open('/work/usrlink/pwned', 'w').write('x'))\n"
                      "attempt('write /proc/1/root/seed', lambda: open('/proc/1/root/seed/calculator.py', 'a').write('x'))\n"
                      "attempt('write /proc/self/cwd/../seed', lambda: open('/proc/self/cwd/../seed/x', 'w').write('x'))\n"
                      "fd = os.open('/seed/calculator.py', os.O_RDONLY)\n"
                      "attempt('reopen /seed fd for write', lambda: open('/proc/self/fd/%d' % fd, 'a').write('x'))\n"
                      "attempt('hardlink /seed into /work', lambda: os.link('/seed/calculator.py', '/work/hard'))\n"
                      "attempt('rename out of /seed', lambda: os.rename('/seed/calculator.py', '/work/stolen'))\n"
                      "attempt('unlink in /seed', lambda: os.unlink('/seed/test_calculator.py'))\n"
                      "attempt('chmod in /seed', lambda: os.chmod('/seed/calculator.py', 0o777))\n"
                      "attempt('mkdir /run/x', lambda: os.mkdir('/run/x'))\n"
                      "attempt('open /sys/kernel/uevent_helper for writing', lambda: os.close(os.open('/sys/kernel/uevent_helper', os.O_WRONLY)))\n"  // never written
                      "attempt('exec from /tmp', lambda: (open('/tmp/x.sh', 'w').write('#!/bin/sh\\n'), os.chmod('/tmp/x.sh', 0o755), os.execv('/tmp/x.sh', ['x'])))\n"
                      "for line in open('/proc/self/mountinfo'):\n"
                      "    f = line.split()\n"
                      "    print('MOUNT %s %s %s' % (f[4], f[line.split().index('-') + 1], f[3]))\n"
                      "open('/work/left-behind-" + std::to_string(getpid()) + "', 'w').write('x')\n");
  const std::string out = output(j);
  INFO(out);
  CHECK_FALSE(has(out, "ESCAPED"));
  CHECK(has(out, "DENIED write via /work/rootlink/etc errno=30"));  // EROFS
  CHECK(has(out, "DENIED write via /work/seedlink errno=30"));
  CHECK(has(out, "DENIED reopen /seed fd for write errno=30"));
  CHECK(has(out, "DENIED hardlink /seed into /work errno=18"));     // EXDEV
  CHECK(has(out, "DENIED exec from /tmp errno=13"));                // noexec
  // The mount table: only podman's standard mounts, the tmpfs pair and /seed.
  std::istringstream mounts(lines_with(out, "MOUNT "));
  std::string line;
  std::set<std::string> points;
  while (std::getline(mounts, line)) {
    std::istringstream f(line.substr(6));
    std::string point, fstype, root;
    f >> point >> fstype >> root;
    points.insert(point);
    if (point == "/seed") CHECK(root.find("/lazyagent-oci/work/r-") != std::string::npos);  // the tool's private copy
    // In a user namespace podman bind-mounts the standard device nodes from
    // the host's /dev (it cannot mknod them): those, and nothing else of it.
    if (fstype == "devtmpfs") {
      static const std::set<std::string> devices = {"/null", "/zero", "/full", "/random", "/urandom", "/tty"};
      CHECK(devices.count(root) == 1);
      continue;
    }
    if (fstype != "proc" && fstype != "sysfs" && fstype != "tmpfs" && fstype != "devpts" && fstype != "mqueue" &&
        fstype != "cgroup" && fstype != "cgroup2" && fstype != "overlay" && point != "/seed") {
      // podman's own files (hosts, hostname, resolv.conf, .containerenv) come from its run dir
      CHECK(root.find("/containers/") != std::string::npos);
    }
    CHECK(root.find(seed_dir()) == std::string::npos);
  }
  CHECK(points.count("/work") == 1);
  CHECK(points.count("/tmp") == 1);
  CHECK(points.count("/seed") == 1);
  // Nothing the sandbox wrote came back: the state dir holds only the record.
  for (const auto& p : tree_names(state.path())) {
    CHECK(p.find("left-behind") == std::string::npos);
    CHECK(p.find("rootlink") == std::string::npos);
  }
  CHECK(hash_tree(seed_dir()) == before);
  CHECK(j["tests_passed"] == true);
  evidence(lines_with(out, "DENIED") + "\n" + lines_with(out, "ESCAPED"));
  std::string pts;
  for (const auto& p : points) pts += p + " ";
  evidence("mount points seen inside: " + pts);
}

TEST_CASE("attack: a seed whose allowed paths are symlinks out of it", "[attack][filesystem][quick]") {
  TempDir state, outside, work;
  const std::string victim = outside.file("calculator.py", "# the host file a symlink points at\n");
  outside.file("pkg/keep.py", "# untouched\n");
  const std::string seed = work.path() + "/seed";
  fs::copy(seed_dir(), seed, fs::copy_options::recursive);
  fs::remove(seed + "/calculator.py");
  fs::create_symlink(victim, seed + "/calculator.py");
  fs::create_directory_symlink(outside.path() + "/pkg", seed + "/pkg");
  const std::string seed_before = hash_tree(seed);
  const std::string outside_before = hash_tree(outside.path());

  const std::string file_patch = work.file("p1.json", fixing_patch());
  CliResult a = run_cli({state.path()}, {"test", "--seed", seed, "--patch", file_patch, "--json"});
  const std::string dir_patch = work.file("p2.json", patch_json("pkg/evil.py", "print('planted')\n"));
  CliResult b = run_cli({state.path()}, {"test", "--seed", seed, "--patch", dir_patch, "--allow", "pkg/", "--json"});
  INFO(a.out << b.out << a.err << b.err);
  CHECK(a.exit_code == 4);
  CHECK(b.exit_code == 4);
  CHECK(has(a.out, "\"code\": \"through_symlink\""));
  CHECK(has(b.out, "\"code\": \"through_symlink\""));
  CHECK(hash_tree(outside.path()) == outside_before);
  CHECK(read_file(victim) == "# the host file a symlink points at\n");
  CHECK_FALSE(fs::exists(outside.path() + "/pkg/evil.py"));
  CHECK(hash_tree(seed) == seed_before);
  evidence("seed/calculator.py -> host file: exit " + std::to_string(a.exit_code) + " (refused, through_symlink); "
           "seed/pkg -> host dir, patch pkg/evil.py: exit " + std::to_string(b.exit_code) +
           "; host files unchanged: " + (hash_tree(outside.path()) == outside_before ? "yes" : "NO"));
}

TEST_CASE("attack: leave files for the next run", "[attack][filesystem][persistence]") {
  TempDir state;
  const std::string mark = "lazyagent-persist-" + std::to_string(getpid());
  json first = run_attack({state.path()},
                          "for d in ('/work', '/tmp', '/dev/shm', '/var/tmp'):\n"
                          "    try:\n"
                          "        open(d + '/" + mark + "', 'w').write('x'); print('PLANTED ' + d)\n"
                          "    except OSError as e: print('NOT PLANTED %s %d' % (d, e.errno))\n");
  json second = run_attack({state.path()},
                           "import os\n"
                           "for d in ('/work', '/tmp', '/dev/shm', '/var/tmp'):\n"
                           "    print(('FOUND ' if os.path.exists(d + '/" + mark + "') else 'ABSENT ') + d)\n");
  const std::string out1 = output(first), out2 = output(second);
  INFO(out1 << out2);
  CHECK(has(out1, "PLANTED /work"));
  CHECK(has(out1, "PLANTED /tmp"));
  CHECK_FALSE(has(out2, "FOUND"));
  CHECK(has(out2, "ABSENT /work"));
  CHECK(fs::is_empty(state.path() + "/lazyagent-oci/work"));
  evidence("first run: " + lines_with(out1, "PLANTED") + "; " + lines_with(out1, "NOT PLANTED") +
           "\nsecond run: " + lines_with(out2, "ABSENT") + lines_with(out2, "FOUND"));
}
