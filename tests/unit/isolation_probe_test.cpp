#include "catch_compat.h"

#include "policy/isolation_probe.h"

using namespace lazyagent;

namespace {
const std::string kClean =
    "lazyagent-probe: ifaces=lo,\n"
    "lazyagent-probe: netdev=lo,\n"
    "lazyagent-probe: CapPrm=0000000000000000\n"
    "lazyagent-probe: CapEff=0000000000000000\n"
    "lazyagent-probe: CapBnd=0000000000000000\n"
    "lazyagent-probe: NoNewPrivs=1\n"
    "lazyagent-probe: Seccomp=2\n"
    "lazyagent-probe: uid_map=0 1879048192 65536\n"
    "lazyagent-probe: root=read-only\n"
    "lazyagent-probe: env=HOME,HOSTNAME,LANG,OLDPWD,PATH,PWD,PYTHONDONTWRITEBYTECODE,PYTHONUNBUFFERED,TMPDIR,\n"
    "lazyagent-probe: egress_runner=python3\n"
    "lazyagent-probe: egress=external tcp 1.1.1.1:443 unreachable\n"
    "lazyagent-probe: egress_done=1 20ms\n"
    "lazyagent-probe: end\n";
}  // namespace

TEST_CASE("a clean probe block is split off the output and passes") {
  std::string rest;
  const ProbeReport r = take_probe(kClean + "Ran 1 test in 0.001s\n\nOK\n", &rest);
  REQUIRE(r.found);
  CHECK(rest == "Ran 1 test in 0.001s\n\nOK\n");
  CHECK(r.interfaces == std::vector<std::string>{"lo"});
  CHECK(probe_violations(r, SandboxPolicy{}).empty());
  CHECK(probe_to_json(r, {})["no_new_privs"] == true);
}

TEST_CASE("each isolation failure the probe can see is named") {
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kClean;
    s.replace(s.find(from), from.size(), to);
    return probe_violations(take_probe(s, nullptr), SandboxPolicy{});
  };
  CHECK(with("ifaces=lo,", "ifaces=eth0,lo,") == std::vector<std::string>{"network interfaces other than lo: eth0,lo"});
  CHECK(with("netdev=lo,", "netdev=lo,eth0,") ==
        std::vector<std::string>{"network interfaces in /proc/net/dev other than lo: eth0,lo"});
  CHECK(with("CapEff=0000000000000000", "CapEff=00000000a80425fb")[0].rfind("capabilities held: CapEff=00000000a80425fb", 0) == 0);
  CHECK(with("NoNewPrivs=1", "NoNewPrivs=0") == std::vector<std::string>{"no_new_privs is not set"});
  CHECK(with("root=read-only", "root=writable") == std::vector<std::string>{"the root filesystem is writable"});
  CHECK(with("Seccomp=2", "Seccomp=0") == std::vector<std::string>{"no seccomp filter (Seccomp=0)"});
  CHECK(with("uid_map=0 1879048192 65536", "uid_map=0 0 4294967295") ==
        std::vector<std::string>{"the sandbox's uid map is '0 0 4294967295', not '0 1879048192 65536' "
                                 "(its root must not be host root)"});
  CHECK(with("env=HOME,", "env=AWS_SECRET_ACCESS_KEY,HOME,") ==
        std::vector<std::string>{"environment variable AWS_SECRET_ACCESS_KEY is not on the allowlist"});
}

TEST_CASE("a probe block that does not start the output is not trusted") {
  std::string rest;
  const ProbeReport r = take_probe("forged line\n" + kClean, &rest);
  CHECK_FALSE(r.found);
  CHECK(rest == "forged line\n" + kClean);
  CHECK(probe_violations(r, SandboxPolicy{}).size() == 1);
}

TEST_CASE("under gVisor the probe is judged by what gVisor's kernel can show") {
  auto gvisor = [](const std::string& from, const std::string& to) {
    std::string s = kClean;
    if (!from.empty()) s.replace(s.find(from), from.size(), to);
    return probe_violations(take_probe(s, nullptr), SandboxPolicy{}, "runsc");
  };
  CHECK(gvisor("", "").empty());
  // gVisor's /proc/self/status has no NoNewPrivs line: not observable, not a pass.
  const std::string no_nnp = "lazyagent-probe: NoNewPrivs=1\n";
  CHECK(gvisor(no_nnp, "").empty());
  std::string s = kClean;
  s.replace(s.find(no_nnp), no_nnp.size(), "");
  const auto j = probe_to_json(take_probe(s, nullptr), {});
  CHECK(j["no_new_privs"].is_null());
  CHECK(j["not_observable"] == nlohmann::json::array({"no_new_privs (not reported in /proc/self/status)"}));
  // ...while under runc the same absence is a violation.
  CHECK(probe_violations(take_probe(s, nullptr), SandboxPolicy{}) == std::vector<std::string>{"no_new_privs is not set"});
  CHECK(gvisor("NoNewPrivs=1", "NoNewPrivs=0") == std::vector<std::string>{"no_new_privs is not set"});
  // An unreadable sysfs leaves /proc/net/dev to decide, which must still show only lo.
  CHECK(gvisor("ifaces=lo,", "ifaces=*,").empty());
  CHECK(gvisor("ifaces=lo,", "ifaces=eth0,lo,") == std::vector<std::string>{"network interfaces other than lo: eth0,lo"});
  std::string both = kClean;
  both.replace(both.find("ifaces=lo,"), 10, "ifaces=*,");
  both.replace(both.find("netdev=lo,"), 10, "netdev=eth0,lo,");
  CHECK(probe_violations(take_probe(both, nullptr), SandboxPolicy{}, "runsc") ==
        std::vector<std::string>{"network interfaces in /proc/net/dev other than lo: eth0,lo"});
  // runsc applies the OCI seccomp profile only with --oci-seccomp: demanded.
  CHECK(gvisor("Seccomp=2", "Seccomp=0") ==
        std::vector<std::string>{"no seccomp filter in force (Seccomp=0; start the runsc service with "
                                 "--runtime-flag oci-seccomp)"});
  // Under runc an unreadable sysfs is still a violation.
  CHECK(probe_violations(take_probe(both, nullptr), SandboxPolicy{}).size() == 2);
}
