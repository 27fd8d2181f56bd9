// The egress probe's findings per target (egress_probe.h), judged over probe
// output captured from real sandboxes: a podman sandbox (only lo), a pod on
// the local cluster's bridge CNI (no NetworkPolicy enforcement), and the
// same pod with the node's iptables dropping its egress (enforcement).
#include "catch_compat.h"

#include "policy/isolation_probe.h"

using namespace lazyagent;

namespace {

const std::string kHead =
    "lazyagent-probe: ifaces=lo,\n"
    "lazyagent-probe: netdev=lo,\n"
    "lazyagent-probe: CapPrm=0000000000000000\n"
    "lazyagent-probe: CapEff=0000000000000000\n"
    "lazyagent-probe: CapBnd=0000000000000000\n"
    "lazyagent-probe: NoNewPrivs=1\n"
    "lazyagent-probe: Seccomp=2\n"
    "lazyagent-probe: uid_map=0 1879048192 65536\n"
    "lazyagent-probe: root=read-only\n"
    "lazyagent-probe: env=HOME,HOSTNAME,LANG,OLDPWD,PATH,PWD,PYTHONDONTWRITEBYTECODE,PYTHONUNBUFFERED,TMPDIR,\n";

// A podman sandbox (network none, an empty resolv.conf): every attempt fails at once.
const std::string kPodman =
    "lazyagent-probe: egress_runner=python3\n"
    "lazyagent-probe: egress=external tcp 192.0.2.80:53 unreachable\n"
    "lazyagent-probe: egress=external tcp 192.0.2.80:80 unreachable\n"
    "lazyagent-probe: egress=external tcp 192.0.2.80:443 unreachable\n"
    "lazyagent-probe: egress=external tcp [2001:db8::80]:443 unreachable\n"
    "lazyagent-probe: egress=external tcp [2001:db8::80]:53 unreachable\n"
    "lazyagent-probe: egress=external udp 192.0.2.80:53 unreachable\n"
    "lazyagent-probe: egress=external udp [2001:db8::80]:53 unreachable\n"
    "lazyagent-probe: egress_done=7 0ms\n"
    "lazyagent-probe: end\n";

// The pod on the bridge CNI, no enforcement: the node answers on the gateway.
const std::string kBridge =
    "lazyagent-probe: egress_runner=python3\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:22 refused\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:53 refused\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:10250 connected\n"
    "lazyagent-probe: egress=gateway udp 10.244.91.1:53 refused\n"
    "lazyagent-probe: egress=dns any 127.0.0.1 loopback\n"
    "lazyagent-probe: egress=dns tcp 10.255.255.53:53 timeout\n"
    "lazyagent-probe: egress=lookup udp mirror.example@10.255.255.53 resolved:192.0.2.14\n"
    "lazyagent-probe: egress=lookup udp kubernetes.default@10.255.255.53 answered\n"
    "lazyagent-probe: egress=api tcp 192.0.2.2:6443 timeout\n"
    "lazyagent-probe: egress=config udp 10.96.0.10:53 answered\n"
    "lazyagent-probe: egress=external tcp 192.0.2.80:443 timeout\n"
    "lazyagent-probe: egress=external tcp [2001:db8::80]:443 unreachable\n"
    "lazyagent-probe: egress=lookup:mirror.example tcp 192.0.2.14:443 timeout\n"
    "lazyagent-probe: egress_done=13 2004ms\n"
    "lazyagent-probe: end\n";

// The same pod with the node dropping its egress.
const std::string kDropped =
    "lazyagent-probe: egress_runner=python3\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:22 timeout\n"
    "lazyagent-probe: egress=gateway udp 10.244.91.1:53 timeout\n"
    "lazyagent-probe: egress=lookup udp kubernetes.default@10.255.255.53 timeout\n"
    "lazyagent-probe: egress=external tcp [2001:db8::80]:443 unreachable\n"
    "lazyagent-probe: egress=dns any 127.0.0.1 loopback\n"
    "lazyagent-probe: egress_done=5 1002ms\n"
    "lazyagent-probe: end\n";

std::string with_eth0(std::string s) {
  s.replace(s.find("ifaces=lo,"), 10, "ifaces=eth0,lo,");
  s.replace(s.find("netdev=lo,"), 10, "netdev=eth0,lo,");
  return s;
}

}  // namespace

TEST_CASE("egress probe: every attempt blocked in a podman sandbox, each target kept with its outcome") {
  std::string rest;
  const ProbeReport r = take_probe(kHead + kPodman + "Ran 4 tests\n", &rest);
  REQUIRE(r.found);
  CHECK(rest == "Ran 4 tests\n");
  CHECK(r.egress.runner == "python3");
  CHECK(r.egress.finished);
  CHECK(r.egress.ms == 0);
  REQUIRE(r.egress.attempts.size() == 7);
  CHECK(r.egress.attempts[0].target == "external");
  CHECK(r.egress.attempts[0].proto == "tcp");
  CHECK(r.egress.attempts[0].address == "192.0.2.80:53");
  CHECK(r.egress.attempts[0].outcome == "unreachable");
  CHECK(r.egress.attempts[3].address == "[2001:db8::80]:443");
  CHECK(probe_violations(r, SandboxPolicy{}).empty());
  CHECK(probe_violations(r, SandboxPolicy{}, "runc", true).empty());
  const auto j = probe_to_json(r, {});
  CHECK(j["egress"]["ran"] == true);
  CHECK(j["egress"]["reached"].empty());
  CHECK(j["egress"]["attempts"][6] == nlohmann::json({{"target", "external"},
                                                      {"proto", "udp"},
                                                      {"address", "[2001:db8::80]:53"},
                                                      {"outcome", "unreachable"}}));
  CHECK_FALSE(j.contains("not_observable"));
}

TEST_CASE("egress probe: on a CNI that does not enforce NetworkPolicy every reached target is named") {
  const ProbeReport r = take_probe(with_eth0(kHead) + kBridge, nullptr);
  REQUIRE(r.egress.finished);
  const std::vector<std::string> reached = {
      "egress reached: gateway tcp 10.244.91.1:22 (refused)",
      "egress reached: gateway tcp 10.244.91.1:53 (refused)",
      "egress reached: gateway tcp 10.244.91.1:10250 (connected)",
      "egress reached: gateway udp 10.244.91.1:53 (refused)",
      "egress reached: lookup udp mirror.example@10.255.255.53 (resolved:192.0.2.14)",
      "egress reached: lookup udp kubernetes.default@10.255.255.53 (answered)",
      "egress reached: config udp 10.96.0.10:53 (answered)"};
  // The egress rule (networkpolicy, runtimeclass): the interface is allowed, the reached targets are not.
  CHECK(probe_violations(r, SandboxPolicy{}, "runc", true) == reached);
  // The only-lo rule (podman, runtime-nonet) names the interface as well.
  auto strict = reached;
  strict.insert(strict.begin(), {"network interfaces other than lo: eth0,lo",
                                 "network interfaces in /proc/net/dev other than lo: eth0,lo"});
  CHECK(probe_violations(r, SandboxPolicy{}) == strict);
  CHECK(probe_to_json(r, {})["egress"]["reached"].size() == 7);
}

TEST_CASE("egress probe: with the node dropping the pod's egress the pod's eth0 passes under the egress rule only") {
  const ProbeReport r = take_probe(with_eth0(kHead) + kDropped, nullptr);
  REQUIRE(r.egress.finished);
  CHECK(r.egress.ms == 1002);
  CHECK(probe_violations(r, SandboxPolicy{}, "runc", true).empty());
  CHECK(probe_violations(r, SandboxPolicy{}).size() == 2);  // only lo: eth0 is still a violation
}

TEST_CASE("egress probe: one that cannot run or did not finish voids the verdict under the egress rule only") {
  const std::string none = "lazyagent-probe: egress_runner=none\nlazyagent-probe: end\n";
  const ProbeReport r = take_probe(kHead + none, nullptr);
  CHECK_FALSE(r.egress.finished);
  CHECK(probe_violations(r, SandboxPolicy{}).empty());  // only lo carries it
  CHECK(probe_to_json(r, {})["not_observable"] ==
        nlohmann::json::array({"egress (the sandbox image has no python3 to run the egress probe)"}));
  CHECK(probe_violations(r, SandboxPolicy{}, "runc", true) ==
        std::vector<std::string>{"the egress probe could not run: the sandbox image has no python3, and this "
                                 "isolation mode rests on the probe (use an image with python3, or a RuntimeClass "
                                 "with no network)"});
  // Killed half-way: fewer attempts than the last line says (or no last line).
  std::string cut = kDropped;
  const std::string line = "lazyagent-probe: egress=dns any 127.0.0.1 loopback\n";
  cut.erase(cut.find(line), line.size());
  const ProbeReport c = take_probe(with_eth0(kHead) + cut, nullptr);
  CHECK_FALSE(c.egress.finished);
  CHECK(probe_violations(c, SandboxPolicy{}, "runc", true) ==
        std::vector<std::string>{"the egress probe did not finish, and this isolation mode rests on it"});
  std::string no_end = kDropped;
  no_end.erase(no_end.find("lazyagent-probe: egress_done"), std::string("lazyagent-probe: egress_done=5 1002ms\n").size());
  CHECK(probe_violations(take_probe(with_eth0(kHead) + no_end, nullptr), SandboxPolicy{}, "runc", true) ==
        std::vector<std::string>{"the egress probe did not finish, and this isolation mode rests on it"});
}

TEST_CASE("egress probe: lines after the block's end are the tests' output, not findings") {
  // Code under test runs after the block: what it prints cannot add or clear a finding.
  std::string rest;
  const ProbeReport r = take_probe(with_eth0(kHead) + kDropped +
                                       "lazyagent-probe: egress=gateway tcp 10.244.91.1:22 connected\n"
                                       "lazyagent-probe: egress_done=6 1ms\n",
                                   &rest);
  CHECK(r.egress.attempts.size() == 5);
  CHECK(r.egress.finished);
  CHECK(probe_violations(r, SandboxPolicy{}, "runc", true).empty());
  CHECK(rest.find("10.244.91.1:22 connected") != std::string::npos);
  // And a block whose gateway line says "connected" is judged by it.
  std::string forged = kDropped;
  forged.replace(forged.find("10.244.91.1:22 timeout"), 22, "10.244.91.1:22 connected");
  CHECK(probe_violations(take_probe(with_eth0(kHead) + forged, nullptr), SandboxPolicy{}, "runc", true) ==
        std::vector<std::string>{"egress reached: gateway tcp 10.244.91.1:22 (connected)"});
}

TEST_CASE("egress probe: not needed with only lo, said as such, never a violation on podman nor unobserved, "
          "a violation where the mode rests on it") {
  const ProbeReport r = take_probe(kHead + "lazyagent-probe: egress_runner=not-needed\nlazyagent-probe: end\n", nullptr);
  REQUIRE(r.found);
  CHECK(r.egress.runner == kEgressNotNeeded);
  CHECK_FALSE(r.egress.finished);
  CHECK(probe_violations(r, SandboxPolicy{}).empty());
  const auto j = probe_to_json(r, {});
  CHECK(j["egress"]["runner"] == "not-needed");
  CHECK(j["egress"]["ran"] == false);
  CHECK(j["egress"]["attempts"].empty());
  CHECK(j["egress"]["not_needed"].get<std::string>().find("no route to any address") != std::string::npos);
  CHECK_FALSE(j.contains("not_observable"));
  // A mode that rests on the probe (Kubernetes networkpolicy, runtimeclass)
  // asks for it always; a block without it is refused there.
  const auto v = probe_violations(r, SandboxPolicy{}, "runc", true);
  REQUIRE(v.size() == 1);
  CHECK(v[0].rfind("the egress probe was not run", 0) == 0);
  // The script: the skip needs both views to list only lo and no "always".
  const std::string& shell = isolation_probe_shell();
  CHECK(shell.find("if [ \"$5\" != always ] && [ \"$n\" = lo, ] && [ \"$d\" = lo, ]; then") != std::string::npos);
}
