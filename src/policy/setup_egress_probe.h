// The egress probe of an environment set-up behind the allow-list (issue 31
// item 5): run in the set-up container itself, before its first step, so
// that the allow-list is proved on the network the steps get, not assumed.
//
// It tries, each attempt bounded (2 s):
//   proxy-unlisted   CONNECT through the proxy to a name no list can hold
//                    (lazyagent-egress-probe.invalid:443): must be refused (403)
//   proxy-listed     CONNECT to the first listed name and port: stated (200
//                    expected), never a refusal (the listed host may be down)
//   direct:ADDR:PORT a TCP connection ignoring the proxy to each target the
//                    tool passes (the podman gateway, this machine's own
//                    addresses) on ports 22, 53, 80, 443: must fail
//   dns:NAME         getaddrinfo of each listed name: must fail (names
//                    resolve only on the proxy's side)
//   ipv6             an IPv6 address other than loopback: must be none
// Each result is a line "::lazyagent-egress-probe NAME OUTCOME::"; the last
// "::lazyagent-egress-probe done N::". A way out (a direct connection that
// connected or was refused by a host, a DNS answer, an IPv6 address, the
// proxy relaying an unlisted name) makes the set-up exit kEgressProbeExit
// before any step runs, and the environment is refused, naming it.
// python3 runs it (`-I -S`); a base without python3 prints "runner none",
// stated in the record as not observable. Pure.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

inline constexpr int kEgressProbeExit = 86;
inline constexpr const char* kEgressProbeMarker = "::lazyagent-egress-probe ";
// The probe's own refused request (proxy-unlisted): a name no list can hold.
// Its denial is the probe's, recorded in its attempts, never a step's.
inline constexpr const char* kEgressProbeTarget = "lazyagent-egress-probe.invalid:443";

// sh text that runs the probe, exits kEgressProbeExit on a way out. `listed`
// the allow-list's entries, `targets` the addresses to try directly.
std::string setup_egress_probe_shell(const std::vector<std::string>& listed, const std::vector<std::string>& targets);

struct SetupEgressProbe {
  bool ran = false;       // the "done" line came
  std::string runner;     // python3, none
  std::vector<std::pair<std::string, std::string>> attempts;  // name, outcome
  std::vector<std::string> ways_out;  // "NAME OUTCOME" of each that got out
  nlohmann::json to_json() const;
};

SetupEgressProbe parse_setup_egress_probe(const std::string& output);

}  // namespace lazyagent
