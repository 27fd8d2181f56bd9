// Attacks on the sandbox's seccomp profile (oci/seccomp.json, issue 6). Code
// in the patch calls each refused syscall directly (ctypes syscall() with its
// x86_64 number, arguments that would make the kernel fail harmlessly) and
// prints the errno it got. Under our profile each must fail with the errno
// the profile names (EPERM, or ENOSYS where programs must fall back). Two
// controls run the same probe with plain `podman run`:
//   * unconfined, with the capability the kernel itself checks for each call
//     (so the kernel reaches its own argument checks): every call then fails
//     differently (EFAULT, EBADF, EINVAL, ...) or succeeds harmlessly, which
//     proves our errno comes from the filter and not from the kernel;
//   * podman's default profile, no capabilities (the sandbox's caps): the
//     calls podman allows get through to the kernel there, which shows the
//     profile is stricter than podman's.
// And the test runs a Python test suite and a compiler still need work.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <map>
#include <sstream>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

struct Call {
  const char* name;   // as printed by the probe
  const char* ours;   // errno name under our profile
  bool podman_allows; // podman's default profile lets it reach the kernel
};

// x86_64 numbers; the probe refuses to guess on another architecture.
const char* kProbe = R"py(
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    e = ctypes.get_errno()
    return 'OK' if r >= 0 else errno.errorcode.get(e, str(e))
print('SECCOMP arch', os.uname().machine)
me = os.getpid()
CALLS = [
 ('setns', 308, (-1, 0)),
 ('clone_newuser', 56, (0x10000000 | 0x200, 0, 0, 0, 0)),  # + CLONE_FS: the kernel says EINVAL
 ('clone_newns', 56, (0x00020000 | 0x200 | 0x10000000, 0, 0, 0, 0)),
 ('clone3', 435, (0, 0)),
 ('mount', 165, (0, 0, 0, 0, 0)),
 ('umount2', 166, (0, 0)),
 ('pivot_root', 155, (0, 0)),
 ('chroot', 161, (0,)),
 ('move_mount', 429, (-1, 0, -1, 0, 0)),
 ('open_tree', 428, (-1, 0, 0)),
 ('fsopen', 430, (0, 0)),
 ('fsconfig', 431, (-1, 0, 0, 0, 0)),
 ('fsmount', 432, (-1, 0, 0)),
 ('fspick', 433, (-1, 0, 0)),
 ('mount_setattr', 442, (-1, 0, 0, 0, 0)),
 ('name_to_handle_at', 303, (-1, 0, 0, 0, 0)),
 ('open_by_handle_at', 304, (-1, 0, 0)),
 ('keyctl', 250, (9999, 0, 0, 0, 0)),
 ('add_key', 248, (0, 0, 0, 0, 0)),
 ('request_key', 249, (0, 0, 0, 0)),
 ('ptrace', 101, (16, 999999, 0, 0)),
 ('process_vm_readv', 310, (me, 0, 0, 0, 0, 0)),
 ('pidfd_getfd', 438, (-1, 0, 0)),
 ('kcmp', 312, (me, me, 99, 0, 0)),
 ('process_madvise', 440, (-1, 0, 0, 0, 0)),
 ('bpf', 321, (9999, 0, 0)),
 ('perf_event_open', 298, (0, 0, -1, -1, 0)),
 ('userfaultfd', 323, (1,)),
 ('fanotify_init', 300, (0xffffffff, 0)),
 ('init_module', 175, (0, 0, 0)),
 ('finit_module', 313, (-1, 0, 0)),
 ('delete_module', 176, (0, 0)),
 ('kexec_load', 246, (0, 0, 0, 0xdead0000)),
 ('kexec_file_load', 320, (-1, -1, 0, 0, 0)),
 ('reboot', 169, (0, 0, 0, 0)),
 ('swapon', 167, (0, 0)),
 ('swapoff', 168, (0,)),
 ('acct', 163, (1,)),
 ('quotactl', 179, (0, 0, 0, 0)),
 ('syslog', 103, (10, 0, 0)),
 ('clock_settime', 227, (1, 0)),
 ('sethostname', 170, (0, 100)),
 ('setdomainname', 171, (0, 100)),
 ('iopl', 172, (99,)),
 ('ioperm', 173, (0xffffffff, 1, 1)),
 ('modify_ldt', 154, (99, 0, 0)),
 ('personality_no_aslr', 135, (0x0040000,)),
 ('io_uring_setup', 425, (1, 0)),
 ('io_uring_enter', 426, (-1, 0, 0, 0, 0, 0)),
 ('io_uring_register', 427, (-1, 0, 0, 0)),
 ('getpid', 39, ()),
 ('personality_query', 135, (0xffffffff,)),
]
if os.uname().machine == 'x86_64':
    for name, nr, args in CALLS:
        print('SECCOMP', name, sc(nr, *args))
    sys.stdout.flush()
    pid = os.fork()  # last, in a child: a new user namespace would change what follows
    if pid == 0:
        print('SECCOMP unshare_newuser', sc(272, 0x10000000), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
)py";

const std::vector<Call>& calls() {
  static const std::vector<Call> c = {
      {"setns", "EPERM", true},           {"clone_newuser", "EPERM", true},
      {"clone_newns", "EPERM", true},     {"clone3", "ENOSYS", true},
      {"unshare_newuser", "EPERM", true}, {"mount", "EPERM", true},
      {"umount2", "EPERM", true},         {"pivot_root", "EPERM", false},
      {"chroot", "EPERM", false},         {"move_mount", "EPERM", false},
      {"open_tree", "EPERM", true},       {"fsopen", "EPERM", false},
      {"fsconfig", "EPERM", true},        {"fsmount", "EPERM", false},
      {"fspick", "EPERM", false},         {"mount_setattr", "EPERM", true},
      {"name_to_handle_at", "EPERM", true}, {"open_by_handle_at", "EPERM", false},
      {"keyctl", "EPERM", true},          {"add_key", "EPERM", false},
      {"request_key", "EPERM", false},    {"ptrace", "EPERM", true},
      {"process_vm_readv", "EPERM", true}, {"pidfd_getfd", "EPERM", true},
      {"kcmp", "EPERM", false},           {"process_madvise", "EPERM", false},
      {"bpf", "EPERM", false},            {"perf_event_open", "EPERM", false},
      {"userfaultfd", "EPERM", false},    {"fanotify_init", "EPERM", false},
      {"init_module", "EPERM", false},    {"finit_module", "EPERM", false},
      {"delete_module", "EPERM", false},  {"kexec_load", "EPERM", false},
      {"kexec_file_load", "EPERM", false}, {"reboot", "EPERM", false},
      {"swapon", "EPERM", false},         {"swapoff", "EPERM", false},
      {"acct", "EPERM", false},           {"quotactl", "EPERM", false},
      {"syslog", "EPERM", false},         {"clock_settime", "EPERM", false},
      {"sethostname", "EPERM", false},    {"setdomainname", "EPERM", false},
      {"iopl", "EPERM", false},           {"ioperm", "EPERM", false},
      {"modify_ldt", "EPERM", true},      {"personality_no_aslr", "ENOSYS", false},
      {"io_uring_setup", "ENOSYS", false}, {"io_uring_enter", "ENOSYS", false},
      {"io_uring_register", "ENOSYS", false},
  };
  return c;
}

// "SECCOMP name result" lines -> name -> result.
std::map<std::string, std::string> results(const std::string& out) {
  std::map<std::string, std::string> r;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string tag, name, value;
    if (l >> tag >> name >> value && tag == "SECCOMP") r[name] = value;
  }
  return r;
}

std::string podman_probe(const std::string& flags) {
  TempDir dir;
  dir.file("probe.py", kProbe);
  return sh("podman run --rm --network none --security-opt no-new-privileges " + flags + " -v " +
            dir.path() + ":/p:ro localhost/lazyagent-sandbox:latest python3 /p/probe.py 2>&1");
}

json run_test_cli(const CliEnv& env, const std::vector<std::string>& args) {
  CliResult r = run_cli(env, args);
  INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 4000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("test_output"));
  j["_exit"] = r.exit_code;
  return j;
}

}  // namespace

TEST_CASE("seccomp: every refused syscall fails in the sandbox with the profile's errno", "[seccomp][privilege]") {
  TempDir state, dir;
  const std::string patch = dir.file("patch.json", attack_patch(kProbe));
  json j = run_test_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--json"});
  const std::string out = j["test_output"].get<std::string>();
  INFO(out);
  const auto got = results(out);
  REQUIRE(got.count("arch"));
  REQUIRE(got.at("arch") == "x86_64");
  for (const Call& c : calls()) {
    INFO(c.name);
    REQUIRE(got.count(c.name));
    CHECK(got.at(c.name) == c.ours);
  }
  CHECK(got.at("getpid") == "OK");             // the filter is an allowlist, not a wall
  CHECK(got.at("personality_query") == "OK");
  CHECK(j["isolation_probe"]["violations"].empty());
  CHECK(j["tests_passed"] == true);            // the fix itself runs fine under the profile
  CHECK(j["policy"]["seccomp"]["default_errno"] == 38);
}

TEST_CASE("seccomp control: without the profile, the kernel answers each call differently", "[seccomp][privilege][control][quick]") {
  // The capabilities the kernel checks before the arguments, so that it
  // reaches them: every call is made with arguments it then refuses (NULL
  // pointers, fd -1, unknown commands), or does something harmless.
  const std::string out = podman_probe(
      "--security-opt seccomp=unconfined --cap-drop ALL "
      "--cap-add SYS_ADMIN,SYS_MODULE,SYS_BOOT,SYS_PACCT,SYS_TIME,SYS_RAWIO,SYS_PTRACE,SYSLOG,"
      "DAC_READ_SEARCH,SYS_CHROOT");
  INFO(out);
  const auto got = results(out);
  REQUIRE(got.count("arch"));
  REQUIRE(got.at("arch") == "x86_64");
  for (const Call& c : calls()) {
    INFO(c.name);
    REQUIRE(got.count(c.name));
    CHECK(got.at(c.name) != c.ours);
  }
  CHECK(got.at("unshare_newuser") == "OK");      // a new user namespace, had the filter let it
  CHECK(got.at("userfaultfd") == "OK");          // user-mode faults need no privilege
  CHECK(got.at("personality_no_aslr") == "OK");  // ASLR off for the next exec
  CHECK(got.at("mount") == "EFAULT");            // the kernel read the (NULL) arguments
  CHECK(got.at("ptrace") == "ESRCH");            // it looked for the process
}

TEST_CASE("seccomp control: podman's default profile lets through what ours refuses", "[seccomp][privilege][control][quick]") {
  const std::string out = podman_probe("--cap-drop ALL");
  INFO(out);
  const auto got = results(out);
  REQUIRE(got.count("arch"));
  REQUIRE(got.at("arch") == "x86_64");
  int stricter = 0;
  for (const Call& c : calls()) {
    if (!c.podman_allows) continue;
    INFO(c.name);
    REQUIRE(got.count(c.name));
    CHECK(got.at(c.name) != c.ours);
    ++stricter;
  }
  CHECK(stricter >= 15);
  CHECK(got.at("unshare_newuser") == "OK");  // podman's default lets a test create a user namespace
}

TEST_CASE("seccomp: a Python test run that threads, forks, spawns and uses multiprocessing passes", "[seccomp][works]") {
  TempDir state, dir;
  const std::string patch = dir.file(
      "patch.json",
      attack_patch("import threading, subprocess, multiprocessing, tempfile, os, signal, select\n"
                   "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
                   "assert subprocess.run(['sh', '-c', 'echo spawned'], capture_output=True).stdout == b'spawned\\n'\n"
                   "with multiprocessing.Pool(2) as pool: assert pool.map(abs, [-1, -2]) == [1, 2]\n"
                   "with tempfile.TemporaryDirectory() as d: open(d + '/f', 'w').write('x')\n"
                   "pid = os.fork()\n"
                   "if pid == 0: os._exit(7)\n"
                   "assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7\n"
                   "print('WORKLOAD OK')\n"));
  json j = run_test_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--json"});
  const std::string out = j["test_output"].get<std::string>();
  INFO(out);
  CHECK(out.find("WORKLOAD OK") != std::string::npos);
  CHECK(j["tests_passed"] == true);
  CHECK(j["_exit"] == 0);
}

// gcc is not in the sandbox image (python3 only): this builds one FROM it,
// under a tag of its own, and removes it afterwards.
class GccImage {
 public:
  GccImage() : tag_("localhost/lazyagent-sandbox-gcc:seccomp-test-" + std::to_string(getpid())) {
    dir_.file("Containerfile",
              "FROM localhost/lazyagent-sandbox:latest\n"
              "RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev "
              "&& rm -rf /var/lib/apt/lists/*\n"
              "LABEL io.lazyagent.test=seccomp\n");
    build_log_ = sh("podman build -q -t " + tag_ + " " + dir_.path() + " 2>&1; echo rc=$?");
  }
  ~GccImage() { sh("podman rmi -f " + tag_ + " >/dev/null 2>&1"); }
  const std::string& tag() const { return tag_; }
  const std::string& build_log() const { return build_log_; }

 private:
  TempDir dir_;
  std::string tag_;
  std::string build_log_;
};

TEST_CASE("seccomp: a C project compiled with gcc and run with threads passes", "[seccomp][works]") {
  GccImage image;
  INFO(image.build_log());
  REQUIRE(image.build_log().find("rc=0") != std::string::npos);
  TempDir state, seed, dir;
  const std::string broken = "#include <pthread.h>\n#include <stdio.h>\n"
                             "static int add(int a, int b) { return a - b; }\n"
                             "static void* work(void* p) { *(int*)p = add(2, 3); return NULL; }\n"
                             "int main(void) {\n"
                             "  pthread_t t; int r = 0;\n"
                             "  if (pthread_create(&t, NULL, work, &r) != 0) return 2;\n"
                             "  pthread_join(t, NULL);\n"
                             "  int ok = (r == 5) + (add(-1, 1) == 0);\n"
                             "  printf(\"%d passed, %d failed\\n\", ok, 2 - ok);\n"
                             "  return ok == 2 ? 0 : 1;\n}\n";
  seed.file("calc.c", broken);
  std::string fixed = broken;
  fixed.replace(fixed.find("a - b"), 5, "a + b");
  const std::string config = dir.file(
      "config.yaml", "seed: " + seed.path() + "\nallow: [calc.c]\n"
                     "test_command: gcc -O2 -pthread -o /work/calc calc.c && ./calc\n"
                     "images: {sandbox: " + image.tag() + "}\n");
  const std::string patch = dir.file("patch.json", patch_json("calc.c", fixed));
  json j = run_test_cli({state.path()}, {"test", "--config", config, "--patch", patch, "--json"});
  const std::string out = j["test_output"].get<std::string>();
  INFO(out);
  CHECK(out.find("2 passed, 0 failed") != std::string::npos);
  CHECK(j["tests_passed"] == true);
  CHECK(j["image"] == image.tag());
}
