#include "export/export_oci.h"

#include <sstream>

#include "policy/oci_seccomp.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// The pieces of the OCI runtime spec this export uses, as types (STYLE.md
// principle 11); field names are the spec's.
struct OciMount {
  std::string destination, type, source;
  std::vector<std::string> options;
};

void to_json(json& j, const OciMount& m) {
  j = json{{"destination", m.destination}, {"type", m.type}, {"source", m.source}, {"options", m.options}};
}

struct OciRlimit {
  std::string type;
  std::int64_t limit;
};

void to_json(json& j, const OciRlimit& r) {
  j = json{{"type", r.type}, {"hard", r.limit}, {"soft", r.limit}};
}

std::string cpus(const SandboxPolicy& p) {
  std::ostringstream o;
  o << static_cast<double>(p.cpu_quota) / static_cast<double>(p.cpu_period);
  return o.str();
}

std::string env_names(const SandboxPolicy& p) {
  std::string out;
  for (const auto& [k, v] : p.env) out += (out.empty() ? "" : " ") + k;
  return out;
}

// podman's own mounts, minus the per-container files it bind-mounts
// (/etc/hosts, /etc/hostname, /run/.containerenv): the bundle's root is
// read-only and runc needs none of them. Options as podman 4.3.1 generates
// them (tests/fixtures/podman-4.3.1/oci-config.json).
std::vector<OciMount> mounts(const SandboxPolicy& p) {
  return {
      {"/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}},
      {"/dev", "tmpfs", "tmpfs", {"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"}},
      {"/dev/pts", "devpts", "devpts", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
      {"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
      {"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}},
      {"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}},
      {"/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}},
      {kWorkDir, "tmpfs", "tmpfs", work_tmpfs_options(p)},
      {kTmpDir, "tmpfs", "tmpfs", tmp_tmpfs_options(p)},
      {kSeedMount, "bind", kOciSeedDir, {"bind", "ro", "nosuid", "nodev", "noexec", "rprivate"}},
  };
}

const std::vector<std::string>& masked_paths() {
  static const std::vector<std::string> paths = {
      "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
      "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
      "/sys/fs/selinux", "/sys/dev/block"};
  return paths;
}

const std::vector<std::string>& readonly_paths() {
  static const std::vector<std::string> paths = {"/proc/asound", "/proc/bus", "/proc/fs",
                                                 "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  return paths;
}

std::string oci_readme(const ExportInput& in, const ExportBundle& b) {
  std::ostringstream o;
  o << "lazyagent-oci export: OCI runtime bundle for runc\n"
       "==================================================\n\n"
       "This directory runs the seed's tests (`" << in.config.test_command << "`)\n"
       "against " << (in.patched() ? "the patched copy" : "an UNPATCHED copy") << " of the seed with the sandbox policy of\n"
       "`lazyagent-oci test`, under runc instead of podman.\n\n"
       "  config.json  the OCI runtime spec (runc 1.1, spec 1.0.2)\n"
       "  rootfs/      the filesystem of " << in.policy.image << " (see image.json)\n"
       "  seed/        the private copy of the seed" << (in.patched() ? " with the patch applied" : "") << ",\n"
       "               mounted read-only at /seed\n\n";
  if (!in.patched()) {
    o << "No patch was given: to test one, export again with --patch FILE (the patch\n"
         "is then validated against the contract and written into seed/).\n\n";
  }
  o << "Run it, as root, from this directory:\n\n" << b.how_to_run << "\n"
       "Reading the result: the exit status is the test command's (0 passed, 1\n"
       "failed, 125 the copy into /work failed, 137 killed: by the memory limit, or\n"
       "by `timeout`, which then had to kill runc itself: the sandbox lives on until\n"
       "`runc delete --force`). An exit status of 0 alone is not proof: `lazyagent-oci\n"
       "test` also requires the runner's report at the end of the output (\"Ran N\n"
       "tests ... OK\"). The output starts with \"lazyagent-probe:\" lines, printed by\n"
       "the sandbox before the tests run: the interfaces, capabilities, no_new_privs,\n"
       "seccomp mode, root and environment names it really got.\n\n"
       "Enforced:\n";
  for (const auto& line : b.enforced) o << "  - " << line << "\n";
  o << "\nNot enforced by this bundle:\n";
  for (const auto& line : b.not_enforced) o << "  - " << line << "\n";
  return o.str();
}

}  // namespace

json oci_runtime_spec(const ExportInput& in, const std::string& rootfs_dir_name) {
  const SandboxPolicy& p = in.policy;
  json env = json::array();
  for (const auto& [k, v] : p.env) env.push_back(k + "=" + v);
  const json no_caps = json::array();
  return json{
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", 0}, {"gid", 0}}},  // root without capabilities (host root: no user namespace here)
        {"args", sandbox_command(in.config.test_command, p.log_bytes, egress_targets_arg(p))},
        {"env", env},
        {"cwd", "/"},
        {"capabilities",
         {{"bounding", no_caps}, {"effective", no_caps}, {"inheritable", no_caps},
          {"permitted", no_caps}, {"ambient", no_caps}}},
        {"rlimits", std::vector<OciRlimit>{{"RLIMIT_NOFILE", p.nofile}, {"RLIMIT_NPROC", p.nproc}}},
        {"noNewPrivileges", true}}},
      {"root", {{"path", rootfs_dir_name}, {"readonly", true}}},
      {"hostname", p.hostname},
      {"mounts", mounts(p)},
      {"annotations",
       {{kLabelRole, "sandbox"}, {"io.lazyagent.export", "oci"}, {"io.lazyagent.image", p.image}}},
      {"linux",
       {// No "path": each namespace is new. The network namespace then holds
        // only a loopback interface (runc brings `lo` up).
        {"namespaces", json::array({{{"type", "pid"}}, {{"type", "network"}}, {{"type", "ipc"}},
                                    {{"type", "uts"}}, {{"type", "mount"}}, {{"type", "cgroup"}}})},
        {"resources",
         {{"devices", json::array({{{"allow", false}, {"access", "rwm"}}})},
          {"memory", {{"limit", p.memory_bytes}, {"swap", p.memory_bytes}}},  // swap = limit: none
          {"pids", {{"limit", p.pids}}},
          {"cpu", {{"quota", p.cpu_quota}, {"period", p.cpu_period}}}}},
        {"maskedPaths", masked_paths()},
        {"readonlyPaths", readonly_paths()},
        {"seccomp", oci_seccomp_profile()}}},
  };
}

ExportBundle export_oci(const ExportInput& in) {
  const SandboxPolicy& p = in.policy;
  const std::int64_t tail = p.log_bytes >= (128 << 10) ? (64 << 10) : p.log_bytes / 2;
  ExportBundle b;
  b.enforced = {
      "network: a new network namespace with only the loopback interface (linux.namespaces)",
      "privileges: all five capability sets empty, noNewPrivileges; uid 0 without capabilities, "
      "as in the podman sandbox",
      "seccomp: an allowlist (oci/seccomp.json, the podman sandbox's profile too): other syscalls "
      "fail with ENOSYS; namespaces (unshare, setns, clone with CLONE_NEW*), the mount API, "
      "keyrings, ptrace, bpf, perf_event_open, userfaultfd, modules, kexec with EPERM; clone3 and "
      "io_uring with ENOSYS",
      "filesystem: read-only root; /work (" + size_text(p.work_tmpfs_bytes) + ") and /tmp (" +
          size_text(p.tmp_tmpfs_bytes) + ", noexec) size-capped tmpfs; /seed a read-only bind of seed/",
      "resources (cgroups): memory " + size_text(p.memory_bytes) + " with no swap, " + std::to_string(p.pids) +
          " pids, " + cpus(p) + " CPU",
      "rlimits: nofile " + std::to_string(p.nofile) + ", nproc " + std::to_string(p.nproc),
      "environment: exactly " + env_names(p),
      "namespaces: pid, network, ipc, uts, mount, cgroup; podman's masked and read-only /proc "
      "and /sys paths",
      "output: the sandbox itself keeps the first " + std::to_string(p.log_bytes - tail) +
          " and the last " + std::to_string(tail) + " bytes of the test's output",
  };
  b.not_enforced = {
      "timeout: runc has no deadline. Run it under `timeout -k 5 " + std::to_string(p.timeout_seconds) +
          " runc run ...` and always `runc delete --force ID` afterwards: the sandbox's PID 1 is a "
          "shell that ignores the SIGTERM runc forwards, so the delete is what kills it",
      "removal: runc keeps the container until `runc delete ID`, also after a timeout or ^C",
      "terminal safety: runc writes the sandbox's bytes straight to its stdout, control characters "
      "included (the sandbox's head/tail cap still bounds the amount); redirect to a file as "
      "shown, and read it with `cat -v`",
      "verification: nothing reads the effective configuration back before start (`lazyagent-oci "
      "test` does); runc runs whatever config.json says, so keep the bundle where only root can write",
      "image pinning: rootfs/ is a copy of " + p.image + " made at export time (image.json names "
      "the image id; a re-export into this directory keeps rootfs/ while that id is unchanged); runc "
      "checks no digest, and edits to rootfs/ or seed/ go unnoticed",
      "verdict: runc reports the exit status only; \"passed\" also needs the runner's report, "
      "which you read in the output",
      "user namespace: unlike the podman sandbox (root inside is host id " + std::to_string(p.userns.host_id) +
          "), the bundle's uid 0 is host uid 0 without capabilities. runc maps ids only when the "
          "mapped root can search every directory down to rootfs/ (measured: a bundle under a 0700 "
          "directory fails with 'mount rootfs: permission denied'), so it is not set here",
      "rootless: this config.json is for root; rootless runc needs a user namespace and id maps",
  };
  b.how_to_run =
      "id=lazyagent-sandbox-$$\n"
      "timeout -k 5 " + std::to_string(p.timeout_seconds) +
      " runc run --bundle . \"$id\" >output.txt 2>&1; echo \"exit status $?\"\n"
      "runc delete --force \"$id\" 2>/dev/null\n"
      "cat -v output.txt\n";
  b.files.push_back({"config.json", oci_runtime_spec(in).dump(2) + "\n", 0644});
  b.files.push_back({"README.txt", oci_readme(in, b), 0644});
  return b;
}

}  // namespace lazyagent
