// The egress probe: what the sandbox can reach, tried from inside it before
// its tests (part of the isolation probe's block, isolation_probe.h).
//
// The interface check ("only lo") says the sandbox has no way out; on a
// Kubernetes pod with an eth0 (a CNI that enforces NetworkPolicy, a gVisor
// or Kata RuntimeClass with its own netstack) it cannot, and only what the
// pod can reach tells. So the probe tries what an escaping test would, each
// attempt bounded by kEgressAttemptSeconds, all at once:
//   gateway   the default route's gateway (/proc/net/route; on a bridge CNI
//             the node itself) on tcp 22, 53, 80, 443, 6443, 10250 (the
//             kubelet), and a DNS query over udp
//   gateway6  the IPv6 default route's next hop (/proc/net/ipv6_route), tcp
//   dns       every nameserver in /etc/resolv.conf (the cluster DNS) on tcp
//   lookup    DNS queries over udp to each nameserver, for the names the
//             engine passes ("lookup=NAME": the package mirror's host, which
//             this machine resolves anyway), kubernetes.default and
//             kubernetes.default.<search domain> (what getaddrinfo would ask;
//             sent by the probe itself, so that each is bounded without a
//             thread: in the local cluster's gVisor pod python could not
//             start one); an address in an answer is then tried on tcp 443
//             ("lookup:NAME")
//   <label>   targets the engine passes ("api=10.96.0.1:443": the Kubernetes
//             API's addresses, which the sandbox's environment does not hold;
//             "external=ADDR:443": the package mirror's addresses, the only
//             hosts outside this machine that it may reach, read from its apt
//             sources; the config's k8s.egress_probe_targets), on tcp; one on
//             port 53 also gets a udp DNS query (the cluster DNS: the sandbox
//             pod's own resolv.conf names only 127.0.0.1, dnsPolicy None)
// The probe never aims at any other address: no public resolver, no
// well-known host. What is outside this machine is represented by the package
// mirror alone, which every machine that installs packages reaches anyway.
// Outcomes: "connected", "refused" (a reset or ICMP port-unreachable: a host
// answered), "answered" (a udp reply), "resolved:ADDRS" (a DNS answer with
// addresses) count as reached;
// "timeout", "unreachable" (no route, host unreachable), "unreadable" (no
// /proc/net/route, as under gVisor), "loopback", "error:ERRNO" as blocked
// (gVisor's netstack answers some calls with EPERM). Any reached target
// voids the verdict.
//
// What runs it: python3 from the sandbox image (`python3 -I -S` from /, so
// nothing of the seed copy or the environment can shadow a module), since a
// shell alone can neither bound a connect nor speak UDP/DNS. The sandbox
// image has python3; a project environment built on another base may not:
// then the probe prints "egress_runner=none", which voids the verdict where
// the isolation rests on this probe (Kubernetes modes networkpolicy and
// runtimeclass) and is stated as not observable where the interface check
// carries it (podman, runtime-nonet). A probe that did not finish (no
// "egress_done=N" line with N attempts) counts as not run.
// When it runs: wherever the sandbox has an interface besides lo, and on
// Kubernetes always; a sandbox with only lo (podman's network none) has no
// route anywhere, so its probe prints "egress_runner=not-needed" instead of
// starting the interpreter (kEgressNotNeeded).
// Whole cost: python3's start plus a few ms where every attempt fails at
// once (no interface, no route: 30-50 ms measured in a podman sandbox), up
// to kEgressAttemptSeconds where every packet is dropped (and once more only
// for addresses a DNS answer gave, which a dropping network never gives).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

constexpr int kEgressAttemptSeconds = 1;

// Shell lines (sh, after the isolation probe's lines) that run the egress
// probe with the targets in "$4" ("label=host:port ...", [v6]:port).
const std::string& egress_probe_shell();

struct EgressAttempt {
  std::string target;   // gateway, dns, external, lookup, api, ...
  std::string proto;    // tcp, udp, dns, file
  std::string address;  // 10.244.91.1:443, [::1]:53, kubernetes.default
  std::string outcome;  // connected, refused, timeout, ...
  bool reached() const;
};

// The runner's name when the probe was not needed: the sandbox had only lo
// (in sysfs and in /proc/net/dev), so no address could be reached and every
// attempt would fail at once. The engine asks for the probe always on
// Kubernetes (sandbox_command's EGRESS_PROBE argument).
inline constexpr const char* kEgressNotNeeded = "not-needed";

struct EgressReport {
  std::string runner;     // "python3"; "none" when the image has none; kEgressNotNeeded
  bool finished = false;  // the probe's last line came, with as many attempts as it said
  long ms = -1;           // its own time from start to the last attempt
  std::vector<EgressAttempt> attempts;
};

// Folds one "egress..." key of the probe block into `r`; false if not one.
// The last line, "egress_done=N Mms", marks it finished when N attempts came.
bool take_egress_line(const std::string& key, const std::string& value, EgressReport* r);

// Violations: every reached target, named; and, if `required`, a probe that
// did not run or did not finish.
std::vector<std::string> egress_violations(const EgressReport& r, bool required);

nlohmann::json egress_to_json(const EgressReport& r);

}  // namespace lazyagent
