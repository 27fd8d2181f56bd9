#include <catch2/catch.hpp>

#include "isolation_probe.h"

using namespace lazyagent;

namespace {
const std::string kClean =
    "lazyagent-probe: ifaces=lo,\n"
    "lazyagent-probe: CapPrm=0000000000000000\n"
    "lazyagent-probe: CapEff=0000000000000000\n"
    "lazyagent-probe: CapBnd=0000000000000000\n"
    "lazyagent-probe: NoNewPrivs=1\n"
    "lazyagent-probe: Seccomp=2\n"
    "lazyagent-probe: uid_map=0 1879048192 65536\n"
    "lazyagent-probe: root=read-only\n"
    "lazyagent-probe: env=HOME,HOSTNAME,LANG,OLDPWD,PATH,PWD,PYTHONDONTWRITEBYTECODE,PYTHONUNBUFFERED,\n"
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
