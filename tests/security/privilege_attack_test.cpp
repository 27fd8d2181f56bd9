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
attempt('unshare user namespace', lambda: child(lambda: libc.unshare(CLONE_NEWUSER)))
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
attempt('init_module', lambda: libc.syscall(175, None, 0, b''))
attempt('bpf prog load', lambda: libc.syscall(321, 5, None, 0))
attempt('keyctl join session keyring', lambda: libc.syscall(250, 1, None))
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

TEST_CASE("attack: setuid binaries, mount, namespaces, capabilities, kernel knobs", "[attack][privilege]") {
  TempDir state;
  json j = run_attack({state.path()}, kProbe);
  const std::string out = output(j);
  INFO(out);
  CHECK(gained(out).empty());
  CHECK(has(out, "STATUS CapEff=0000000000000000"));
  CHECK(has(out, "STATUS CapPrm=0000000000000000"));
  CHECK(has(out, "STATUS CapBnd=0000000000000000"));
  CHECK(has(out, "STATUS NoNewPrivs=1"));
  CHECK(has(out, "STATUS Seccomp=2"));
  // Every attempt ran and reported (16 calls, 6 knobs, 3 devices).
  CHECK(count_lines(out, "DENIED ") + count_lines(out, "GAINED ") == 25);
  CHECK(j["tests_passed"] == true);
  evidence(lines_with(out, "STATUS") + "\n" + lines_with(out, "DENIED") + "\n" + lines_with(out, "GAINED"));
}

TEST_CASE("attack control: the same probe in a --privileged container gains privileges", "[attack][privilege][control]") {
  const std::string out = run_control("--network none --privileged", kProbe);
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
