// The planner's own egress probe on podman with provider.network: allowlist
// (issue 31 item 4): `lazyagent-oci plan --egress-proxy ADDR:PORT
// --egress-targets "label=ADDR:PORT ..."` runs it before it reads the task
// or calls the provider, in the planner container, on the network the
// provider requests then take (engine/podman/podman_planner.h). The planner
// image has no python3, so this is the probe of egress_probe.h cut down to
// what an internal network with one proxy must show, in C++:
//   <label>          a direct TCP connection to each target (this machine's
//                    addresses, the podman gateway, on 22/80/443 and the
//                    provider's port): must not connect nor be refused by a
//                    host (an internal network has no route: "unreachable")
//   proxy-unlisted   CONNECT through the proxy to a name no list holds
//                    (kPlannerProbeUnlisted): must be answered 403
//                    ("denied"); any other answer counts as reached
// Each attempt is bounded by kEgressAttemptSeconds. The report is judged
// like the Kubernetes planner pod's (judge_planner_egress, with nothing
// allowed directly: the provider is reached through the proxy only), and
// lands in the planner-summary's `planner_egress`.
#pragma once

#include <string>
#include <vector>

#include "policy/egress_probe.h"

namespace lazyagent {

inline constexpr const char* kPlannerProbeUnlisted = "lazyagent-egress-probe.invalid:443";

// `proxy` ADDR:PORT (IPv4), `targets` "label=ADDR:PORT" (IPv4; others are
// skipped). runner "builtin"; finished once every attempt has an outcome.
EgressReport probe_proxy_egress(const std::string& proxy, const std::vector<std::string>& targets);

}  // namespace lazyagent
