// The planner pod's egress on Kubernetes (issue 20 item 3): a NetworkPolicy
// that lets the planner pod reach only the provider's addresses
// (k8s.planner_egress, HOST:PORT with IP addresses), and the egress probe
// (egress_probe.h, the same script) run in the planner pod before the
// provider is called, judged here: the policy is stated "enforced" only
// when every attempt to something other than the allowed addresses was
// blocked. Pure.
//
// How it runs: an init container of the planner pod (the sandbox image,
// which has python3; the planner image has none) runs the probe and writes
// its lines to an emptyDir; `lazyagent-oci plan --egress-report FILE`
// judges them before it calls the provider and puts the verdict in its
// planner-summary (`planner_egress` in the task record); with
// k8s.planner_egress_required it refuses (exit 4) when not enforced.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/egress_probe.h"

namespace lazyagent {

inline constexpr const char* kPlannerEgressDir = "/egress";
inline constexpr const char* kPlannerEgressFile = "/egress/probe.txt";

// sh -c text for the init container: the probe's lines into
// kPlannerEgressFile, targets in "$1" ("label=ADDR:PORT ...").
std::string planner_egress_probe_script();

// The NetworkPolicy's egress rules for `allowed` (HOST:PORT, HOST an IPv4
// or [IPv6] address): one rule per entry, ipBlock /32 (/128) and TCP port.
nlohmann::ordered_json planner_egress_rules(const std::vector<std::string>& allowed);

struct PlannerEgressVerdict {
  bool enforced = false;
  std::vector<std::string> findings;  // what was reached besides the allowed, or why the probe says nothing
  nlohmann::json to_json(const EgressReport& r, const std::vector<std::string>& allowed) const;
};

// Parses the probe's "lazyagent-probe: egress...=..." lines from `output`.
EgressReport parse_egress_output(const std::string& output);

// Enforced when the probe finished and reached nothing but the allowed
// addresses (an attempt to an allowed ADDR:PORT is the provider's, not egress).
PlannerEgressVerdict judge_planner_egress(const EgressReport& r, const std::vector<std::string>& allowed);

}  // namespace lazyagent
