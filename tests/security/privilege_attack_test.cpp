// Privilege: the sandbox process has no capabilities, no-new-privileges and
// podman's seccomp filter, so the classic escalations and escapes fail:
// setuid binaries, mount (and the cgroup release_agent / core_pattern /
// uevent_helper escapes that need a writable kernel knob), new user or mount
// namespaces, chown/mknod/setuid, the "shocker" open_by_handle_at escape,
// raw kernel interfaces (never the clock, reboot or ptrace: the control
// is privileged). Nothing here asserts a particular errno or uid, so
// these keep holding when the sandbox moves into a user namespace with its
// own seccomp profile (tests/security/userns_test.cpp, seccomp_test.cpp).
// The control runs the same probe in a `--privileged` container, where the
// same attempts succeed. The probe only ever *opens* kernel knobs for
// writing, never writes them, so the control cannot change the host.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "attack_common.h"

using nlohmann::json;
using namespace it;
using namespace sec;

namespace {

const char* kProbe = R"py(import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, fn):
    try:
        r = fn()
        if r is not None and r < 0:
            print('DENIED %s errno=%d' % (name, ctypes.get_errno()))
        else:
            print('GAINED ' + name)
    except OSError as e:
        print('DENIED %s errno=%d' % (name, e.errno))
    except subprocess.CalledProcessError as e:
        print('DENIED %s exit=%d' % (name, e.returncode))
status = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\t' in l)
for k in ('CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp'):
    print('STATUS %s=%s' % (k, status.get(k, '?').strip()))
os.makedirs('/tmp/m', exist_ok=True)
open('/tmp/owned', 'w').close()
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000
def child(fn):
    # run fn in a forked child (namespace changes must not affect the probe)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if fn() == 0 else 1)
    return -1 if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) else 0
attempt('setuid binary mount(8)', lambda: subprocess.run(['/usr/bin/mount', '-t', 'tmpfs', 'none', '/tmp/m'], check=True, capture_output=True) and None)
attempt('mount(2) tmpfs', lambda: libc.mount(b'none', b'/tmp/m', b'tmpfs', 0, None))
attempt('mount(2) cgroup (release_agent escape)', lambda: libc.mount(b'cgroup', b'/tmp/m', b'cgroup', 0, b'rdma'))
attempt('remount / read-write', lambda: libc.mount(None, b'/', None, 32 | 4096, None))  # MS_REMOUNT|MS_BIND
attempt('unshare mount namespace', lambda: child(lambda: libc.unshare(CLONE_NEWNS)))
attempt('unshare net namespace', lambda: child(lambda: libc.unshare(CLONE_NEWNET)))
attempt('unshare(1) -r (user ns as root)', lambda: subprocess.run(['unshare', '-r', 'true'], check=True, capture_output=True) and None)
attempt('chown to another user', lambda: os.chown('/tmp/owned', 4242, 4242))
attempt('mknod a block device', lambda: os.mknod('/tmp/sda', 0o600 | 0o060000, os.makedev(8, 0)))
attempt('setuid to another user', lambda: child(lambda: libc.setuid(4242)))
attempt('sethostname', lambda: libc.sethostname(b'pwned', 5))
class FH(ctypes.Structure):
    _fields_ = [('bytes', ctypes.c_uint), ('type', ctypes.c_int), ('h', ctypes.c_ubyte * 128)]
fh = FH(); fh.bytes = 128; mnt = ctypes.c_int()
libc.name_to_handle_at(-100, b'/etc/hostname', ctypes.byref(fh), ctypes.byref(mnt), 0)
attempt('open_by_handle_at (shocker)', lambda: libc.open_by_handle_at(os.open('/', os.O_RDONLY), ctypes.byref(fh), 0))
def read_key():
    kid = libc.syscall(250, 10, -4, b'user', KEY_DESC, 0)      # KEYCTL_SEARCH in @u
    if kid < 0: return -1
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(250, 11, kid, buf, 256)                    # KEYCTL_READ
    if n < 0: return -1
    print('KEY PAYLOAD ' + buf.raw[:n].decode('latin-1'))
attempt('init_module', lambda: libc.syscall(175, None, 0, b''))
attempt('bpf prog load', lambda: libc.syscall(321, 5, None, 0))
attempt('read a key of the host root\'s keyring', lambda: read_key())
for knob in ('/proc/sys/kernel/core_pattern', '/proc/sysrq-trigger', '/sys/kernel/uevent_helper',
             '/proc/sys/kernel/modprobe', '/sys/fs/cgroup/release_agent', '/sys/fs/cgroup/cgroup.procs'):
    def open_rw(k=knob):
        os.close(os.open(k, os.O_WRONLY))   # opened for writing, never written
    attempt('open ' + knob + ' for writing', open_rw)
for dev in ('/dev/mem', '/dev/kmsg', '/proc/kcore'):
    def read_dev(d=dev):
        with open(d, 'rb') as f: f.read(1)
    attempt('read ' + dev, read_dev)
)py";

// A key in the host root's user keyring (@u) for the time of a test: a
// secret a host process could keep there. Keyrings are not namespaced by
// podman's defaults.
const std::string kKeyPayload = "lazyagent-keyring-canary-" + std::to_string(getpid());
const std::string kKeyDesc = "lazyagent-key-" + std::to_string(getpid());
class HostKey {
 public:
  HostKey() {
    id_ = syscall(SYS_add_key, "user", kKeyDesc.c_str(), kKeyPayload.data(), kKeyPayload.size(), -4 /* @u */);
    REQUIRE(id_ > 0);
  }
  ~HostKey() {
    syscall(SYS_keyctl, 21 /* KEYCTL_INVALIDATE */, id_);
    syscall(SYS_keyctl, 9 /* KEYCTL_UNLINK */, id_, -4);
  }

 private:
  long id_ = -1;
};

std::string probe(const char* body) { return "KEY_DESC = b'" + kKeyDesc + "'\n" + body; }

std::size_t count_lines(const std::string& out, const std::string& prefix) {
  const std::string l = lines_with(out, prefix);
  return l.empty() ? 0 : 1 + static_cast<std::size_t>(std::count(l.begin(), l.end(), '\n'));
}

std::vector<std::string> gained(const std::string& out) {
  std::vector<std::string> g;
  std::istringstream in(lines_with(out, "GAINED "));
  std::string line;
  while (std::getline(in, line)) g.push_back(line.substr(7));
  return g;
}

}  // namespace

TEST_CASE("attack: setuid binaries, mount, namespaces, capabilities, kernel knobs", "[attack][privilege][quick]") {
  TempDir state;
  HostKey key;
  json j = run_attack({state.path()}, probe(kProbe));
  const std::string out = output(j);
  INFO(out);
  CHECK(gained(out).empty());
  CHECK(has(out, "STATUS CapEff=0000000000000000"));
  CHECK(has(out, "STATUS CapPrm=0000000000000000"));
  CHECK(has(out, "STATUS CapBnd=0000000000000000"));
  CHECK(has(out, "STATUS NoNewPrivs=1"));
  CHECK(has(out, "STATUS Seccomp=2"));
  // Every attempt ran and reported (15 calls, 6 knobs, 3 devices).
  CHECK(count_lines(out, "DENIED ") + count_lines(out, "GAINED ") == 24);
  CHECK_FALSE(has(out, kKeyPayload));
  CHECK(j["tests_passed"] == true);
  evidence(lines_with(out, "STATUS") + "\n" + lines_with(out, "DENIED") + "\n" + lines_with(out, "GAINED"));
}

TEST_CASE("attack control: the same probe in a --privileged container gains privileges", "[attack][privilege][control][quick]") {
  HostKey key;
  const std::string out = run_control("--network none --privileged", probe(kProbe));
  INFO(out);
  const auto g = gained(out);
  std::set<std::string> got(g.begin(), g.end());
  CHECK(got.count("mount(2) tmpfs") == 1);
  CHECK(got.count("unshare mount namespace") == 1);
  CHECK(got.count("chown to another user") == 1);
  CHECK(got.count("sethostname") == 1);
  CHECK(got.count("setuid to another user") == 1);
  CHECK(got.count("open /proc/sys/kernel/core_pattern for writing") == 1);
  CHECK_FALSE(has(out, "STATUS CapEff=0000000000000000"));
  evidence("control (--privileged): " + std::to_string(g.size()) + " of the attempts succeed\n" +
           lines_with(out, "STATUS CapEff") + "\n" + lines_with(out, "GAINED"));
}

namespace {

// Kernel interfaces podman's default seccomp profile leaves open to a
// process without capabilities: creating user namespaces (and with one, a
// network namespace it administers: the nf_tables attack surface of several
// local privilege escalations), and the kernel keyrings, which podman does
// not namespace: the sandbox can find keys in the host root's keyring (it
// cannot read their payload: see the test above).
const char* kKernelProbe = R"py(import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, fn):
    r = fn()
    print(('DENIED %s errno=%d' % (name, ctypes.get_errno())) if r < 0 else ('GAINED %s' % name))
def child(fn):
    pid = os.fork()
    if pid == 0:
        os._exit(0 if fn() == 0 else 1)
    return -1 if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) else 0
attempt('unshare a user namespace', lambda: child(lambda: libc.unshare(0x10000000)))
attempt('unshare a user + network namespace', lambda: child(lambda: libc.unshare(0x10000000 | 0x40000000)))
attempt('join a new session keyring', lambda: child(lambda: 0 if libc.syscall(250, 1, None) >= 0 else -1))
attempt('find a key in the host root\'s keyring', lambda: libc.syscall(250, 10, -4, b'user', KEY_DESC, 0))
)py";

}  // namespace

TEST_CASE("attack: new user namespaces and the host's kernel keyrings", "[attack][privilege][quick]") {
  TempDir state;
  HostKey key;
  json j = run_attack({state.path()}, probe(kKernelProbe));
  const std::string out = output(j);
  INFO(out);
  CHECK(count_lines(out, "DENIED ") + count_lines(out, "GAINED ") == 4);
  CHECK(gained(out).empty());
  evidence(lines_with(out, "GAINED") + "\n" + lines_with(out, "DENIED"));
}

TEST_CASE("attack control: a --privileged container gets user namespaces and keyrings", "[attack][privilege][control][quick]") {
  HostKey key;
  const std::string out = run_control("--network none --privileged", probe(kKernelProbe));
  INFO(out);
  CHECK(gained(out).size() == 4);
  evidence("control (--privileged):\n" + lines_with(out, "GAINED") + "\n" + lines_with(out, "DENIED"));
}

namespace {

// Looks for another sandbox's process (by a marker in its command line) and
// for the host's processes, and SIGKILLs the neighbour if it can see it.
std::string neighbour_probe(const std::string& marker) {
  return "import os, signal\n"
         "pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
         "seen = []\n"
         "for p in pids:\n"
         "    try:\n"
         "        if b'" + marker + "' in open('/proc/%d/cmdline' % p, 'rb').read(): seen.append(p)\n"
         "    except OSError: pass\n"
         "print('PIDS VISIBLE %d' % len(pids))\n"
         "print('NEIGHBOUR SEEN %d' % len(seen))\n"
         "for p in seen:\n"  // only the neighbour: a breach must not take the host down with it
         "    try: os.kill(p, signal.SIGKILL); print('NEIGHBOUR KILLED %d' % p)\n"
         "    except OSError as e: print('NEIGHBOUR KILL DENIED %d' % e.errno)\n";
}

}  // namespace

TEST_CASE("attack: see or kill a concurrent sandbox and the host's processes", "[attack][isolation]") {
  TempDir state, io;
  const std::string marker = "lazyagent-neighbour-" + std::to_string(getpid());
  const std::string hang = io.file("hang.json", attack_patch("import sys, time\nsys.argv.append('" + marker +
                                                              "')\nimport os\nif os.fork() == 0:\n    os.execv('/bin/sh', ['/bin/sh', '-c', 'sleep 3600', '" +
                                                              marker + "'])\ntime.sleep(3600)\n"));
  const pid_t neighbour = spawn_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", hang, "--timeout", "60", "--json"},
                                    io.path());
  const std::string label = "io.lazyagent.pid=" + std::to_string(neighbour);
  auto running = [&] { return !sh("podman ps --filter label=" + label + " --filter status=running --format '{{.ID}}'").empty(); };
  bool up = false;
  for (int i = 0; i < 1200 && !up; ++i) {
    up = running() && !host_pids_with(marker).empty();
    if (!up) usleep(50 * 1000);
  }
  REQUIRE(up);
  json j = run_attack({state.path()}, neighbour_probe(marker));
  const std::string out = output(j);
  INFO(out);
  const bool neighbour_alive = running() && !host_pids_with(marker).empty();
  kill(neighbour, SIGTERM);
  wait_cli(neighbour, 30);
  CHECK(has(out, "NEIGHBOUR SEEN 0"));
  CHECK(neighbour_alive);
  const std::string visible = lines_with(out, "PIDS VISIBLE ");
  REQUIRE(visible.size() > 13);
  CHECK(std::stoi(visible.substr(13)) < 20);  // its own few processes, not the host's hundreds
  CHECK(containers_with_label(label).empty());
  evidence(visible + " (host: " + std::to_string(host_pids_with("").size()) + "), " + lines_with(out, "NEIGHBOUR") +
           "; the neighbour sandbox still running afterwards: " + (neighbour_alive ? "yes" : "NO"));
}

TEST_CASE("attack control: with the host's pid namespace the same probe sees the neighbour", "[attack][isolation][control][quick]") {
  const std::string marker = "lazyagent-neighbour-ctl-" + std::to_string(getpid());
  TempDir io;
  // A harmless host process carrying the marker stands in for the neighbour.
  // The control runs only the looking half of the probe: it must never
  // signal the host's processes.
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    const int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl("/bin/sleep", marker.c_str(), "120", nullptr);  // argv[0] carries the marker
    _exit(127);
  }
  usleep(200 * 1000);
  std::string probe = neighbour_probe(marker);
  probe = probe.substr(0, probe.find("for p in seen:"));  // never signal host processes from the control
  const std::string out = run_control("--network none --pid host", probe);
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  INFO(out);
  CHECK(has(out, "NEIGHBOUR SEEN 1"));
  const std::string visible = lines_with(out, "PIDS VISIBLE ");
  REQUIRE(visible.size() > 13);
  CHECK(std::stoi(visible.substr(13)) > 20);
  evidence("control (--pid host): " + visible + ", " + lines_with(out, "NEIGHBOUR"));
}
