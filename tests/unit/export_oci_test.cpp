// One policy in, the OCI runtime spec out: the security fields, exactly.
#include "test_paths.h"
#include "catch_compat.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "export/export_oci.h"
#include "policy/oci_seccomp.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

ExportInput oci_input(bool with_patch = true) {
  ExportInput in;
  in.config.seed = "/home/user/project";
  in.policy = policy_from_config(in.config, 120);
  in.planner = planner_request_from_config(in.config);
  in.seed.root = "/home/user/project";
  in.seed.entries = {{"calculator.py", SeedEntry::Kind::kFile, 0644, "def add(a, b):\n    return a - b\n"}};
  if (with_patch) in.patch = Patch{{{"calculator.py", "def add(a, b):\n    return a + b\n"}}};
  return in;
}

bool has(const json& array, const std::string& s) {
  return std::find(array.begin(), array.end(), s) != array.end();
}

const json* mount_at(const json& spec, const std::string& dest) {
  for (const auto& m : spec["mounts"]) {
    if (m["destination"] == dest) return &m;
  }
  return nullptr;
}

// Syscall names of the profile's rules with this action (and errno).
std::vector<std::string> rule_names(const json& profile, const std::string& action, int errno_ret = -1) {
  std::vector<std::string> out;
  for (const auto& r : profile["syscalls"]) {
    if (r["action"] != action || r.contains("args")) continue;
    if (errno_ret >= 0 && r.value("errnoRet", -1) != errno_ret) continue;
    for (const auto& n : r["names"]) out.push_back(n);
  }
  return out;
}

}  // namespace

TEST_CASE("oci: the process is the sandbox's program, root without capabilities") {
  const ExportInput in = oci_input();
  const json s = oci_runtime_spec(in);
  const json& p = s["process"];
  CHECK(s["ociVersion"] == "1.0.2");
  CHECK(p["args"] == json(sandbox_command("python3 -m unittest -v", 1 << 20)));
  CHECK(p["cwd"] == "/");
  CHECK(p["terminal"] == false);
  CHECK(p["user"] == json{{"uid", 0}, {"gid", 0}});
  CHECK(p["noNewPrivileges"] == true);
  for (const char* set : {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
    INFO(set);
    CHECK(p["capabilities"][set] == json::array());
  }
  CHECK(p["capabilities"].size() == 5);
  CHECK(p["rlimits"] == json::array({{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}},
                                     {{"type", "RLIMIT_NPROC"}, {"hard", 256}, {"soft", 256}}}));
  CHECK(p["env"] == json::array({"HOME=/work", "LANG=C.UTF-8",
                                 "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                 "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "TMPDIR=/work/.lazyagent-tmp"}));
}

TEST_CASE("oci: read-only root, podman's mounts, capped tmpfs and the bundle's seed copy") {
  const ExportInput in = oci_input();
  const json s = oci_runtime_spec(in);
  CHECK(s["root"] == json{{"path", "rootfs"}, {"readonly", true}});
  CHECK(oci_runtime_spec(in, "other")["root"]["path"] == "other");
  CHECK(s["hostname"] == "sandbox");
  std::vector<std::string> dests;
  for (const auto& m : s["mounts"]) dests.push_back(m["destination"]);
  CHECK(dests == std::vector<std::string>{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys",
                                          "/sys/fs/cgroup", "/work", "/tmp", "/seed"});
  CHECK((*mount_at(s, "/work"))["options"] == json(work_tmpfs_options(in.policy)));
  CHECK((*mount_at(s, "/tmp"))["options"] == json(tmp_tmpfs_options(in.policy)));
  CHECK((*mount_at(s, "/sys"))["options"] == json::array({"nosuid", "noexec", "nodev", "ro"}));
  CHECK(has((*mount_at(s, "/sys/fs/cgroup"))["options"], "ro"));
  const json& seed = *mount_at(s, "/seed");
  CHECK(seed["type"] == "bind");
  CHECK(seed["source"] == "seed");  // relative: runc resolves it in the bundle directory
  CHECK(seed["options"] == json::array({"bind", "ro", "nosuid", "nodev", "noexec", "rprivate"}));
  // Nothing of the user's: no mount names the seed's own path.
  CHECK(s.dump().find("/home/user/project") == std::string::npos);
}

TEST_CASE("oci: new namespaces (network: only lo), cgroup limits from the policy") {
  ExportInput in = oci_input();
  in.config.limits.memory_mib = 256;
  in.config.limits.pids = 64;
  in.config.limits.cpus = 0.5;
  in.policy = policy_from_config(in.config, 30);
  const json l = oci_runtime_spec(in)["linux"];
  CHECK(l["namespaces"] == json::array({{{"type", "pid"}}, {{"type", "network"}}, {{"type", "ipc"}},
                                        {{"type", "uts"}}, {{"type", "mount"}}, {{"type", "cgroup"}}}));
  CHECK(l["resources"]["memory"] == json{{"limit", 256LL << 20}, {"swap", 256LL << 20}});
  CHECK(l["resources"]["pids"] == json{{"limit", 64}});
  CHECK(l["resources"]["cpu"] == json{{"quota", 50000}, {"period", 100000}});
  CHECK(l["resources"]["devices"] == json::array({{{"allow", false}, {"access", "rwm"}}}));
  CHECK(has(l["maskedPaths"], "/proc/kcore"));
  CHECK(has(l["maskedPaths"], "/sys/firmware"));
  CHECK(has(l["readonlyPaths"], "/proc/sys"));
  CHECK(has(l["readonlyPaths"], "/proc/sysrq-trigger"));
}

TEST_CASE("oci: the seccomp profile is an enforced allowlist, and it is oci/seccomp.json") {
  const json spec = oci_runtime_spec(oci_input());
  const json& profile = spec["linux"]["seccomp"];
  CHECK(profile == oci_seccomp_profile());
  CHECK(profile["defaultAction"] == "SCMP_ACT_ERRNO");
  CHECK(profile["defaultErrnoRet"] == 38);
  CHECK(has(profile["architectures"], "SCMP_ARCH_X86_64"));
  const auto allowed = rule_names(profile, "SCMP_ACT_ALLOW");
  const auto eperm = rule_names(profile, "SCMP_ACT_ERRNO", 1);
  for (const char* s : {"read", "write", "execve", "openat", "mkdirat", "wait4", "pipe2", "rt_sigaction"}) {
    INFO(s);
    CHECK(std::find(allowed.begin(), allowed.end(), s) != allowed.end());
  }
  for (const char* s : {"mount", "umount2", "unshare", "setns", "pivot_root", "keyctl", "ptrace",
                        "open_tree", "move_mount", "bpf", "kexec_load", "init_module"}) {
    INFO(s);
    CHECK(std::find(allowed.begin(), allowed.end(), s) == allowed.end());
    CHECK(std::find(eperm.begin(), eperm.end(), s) != eperm.end());
  }
  // clone allowed only without namespace flags (each flag refused: see
  // userns_seccomp_test); clone3 falls back to it, io_uring to plain I/O (ENOSYS).
  bool clone_masked = false;
  for (const auto& r : profile["syscalls"]) {
    if (r["names"] == json::array({"clone"}) && r["action"] == "SCMP_ACT_ALLOW") {
      clone_masked = r["args"][0]["op"] == "SCMP_CMP_MASKED_EQ" &&
                     r["args"][0]["value"] == 0x7E020000 && r["args"][0]["valueTwo"] == 0;
    }
  }
  CHECK(clone_masked);
  CHECK(rule_names(profile, "SCMP_ACT_ERRNO", 38) ==
        std::vector<std::string>{"clone3", "io_uring_enter", "io_uring_register", "io_uring_setup"});

  std::ifstream f(std::string(LAZYAGENT_SOURCE_DIR) + "/oci/seccomp.json");
  std::stringstream text;
  text << f.rdbuf();
  CHECK(json::parse(text.str()) == oci_seccomp_profile());  // embedded at build time, not copied by hand
}

TEST_CASE("oci: the bundle's files and what it says it cannot enforce") {
  const ExportBundle b = export_oci(oci_input());
  REQUIRE(b.files.size() == 2);
  CHECK(b.files[0].path == "config.json");
  CHECK(json::parse(b.files[0].content) == oci_runtime_spec(oci_input()));
  CHECK(b.files[1].path == "README.txt");
  std::vector<std::string> heads;
  for (const auto& l : b.not_enforced) heads.push_back(l.substr(0, l.find(':')));
  CHECK(heads == std::vector<std::string>{"timeout", "removal", "terminal safety", "verification",
                                          "image pinning", "verdict", "user namespace", "rootless"});
  CHECK(b.not_enforced[0].find("`timeout -k 5 120 runc run ...`") != std::string::npos);
  CHECK(b.not_enforced[0].find("runc delete --force ID") != std::string::npos);
  CHECK(b.enforced[0] == "network: a new network namespace with only the loopback interface (linux.namespaces)");
  CHECK(b.how_to_run ==
        "id=lazyagent-sandbox-$$\n"
        "timeout -k 5 120 runc run --bundle . \"$id\" >output.txt 2>&1; echo \"exit status $?\"\n"
        "runc delete --force \"$id\" 2>/dev/null\n"
        "cat -v output.txt\n");
  const std::string& readme = b.files[1].content;
  CHECK(readme.find(b.how_to_run) != std::string::npos);
  CHECK(readme.find("the patched copy") != std::string::npos);
  for (const auto& l : b.not_enforced) CHECK(readme.find(l) != std::string::npos);
}

TEST_CASE("oci: without a patch the README says where the patch goes") {
  const ExportBundle b = export_oci(oci_input(false));
  const std::string& readme = b.files[1].content;
  CHECK(readme.find("an UNPATCHED copy") != std::string::npos);
  CHECK(readme.find("export again with --patch FILE") != std::string::npos);
}

TEST_CASE("oci: no secret name, value or provider setting reaches the sandbox's spec") {
  ExportInput in = oci_input();
  in.planner.api_key_secret = "MY_SECRET_KEY_NAME";
  in.config.provider.api_key_secret = "MY_SECRET_KEY_NAME";
  const std::string text = oci_runtime_spec(in).dump();
  for (const char* s : {"MY_SECRET_KEY_NAME", "CODING_AGENT", "/run/secrets", "api_key", "base_url"}) {
    INFO(s);
    CHECK(text.find(s) == std::string::npos);
  }
}
