// The isolation probe: what the sandbox itself sees, checked before its tests.
//
// The verifier (policy_verifier.h) checks what podman *says* it will run; the
// probe checks what the process inside *gets*. Before the test command
// starts, the sandbox script prints a block of "lazyagent-probe: key=value"
// lines straight to stdout: network interfaces (sysfs and /proc/net/dev), capability sets,
// no_new_privs, seccomp mode, its uid map (user namespace), whether / is writable,
// the environment's names.
// It uses shell builtins only (no extra processes, any image with /bin/sh);
// then the egress probe (egress_probe.h, python3 from the image) adds what
// the sandbox can reach, in the same block.
// The block comes first in the output, before any code under test has run,
// so that code cannot forge it; the orchestrator takes the first block only,
// removes it from the test output, stores it in the result, and refuses the
// run as an engine failure when it shows a violation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/egress_probe.h"
#include "policy/sandbox_policy.h"

namespace lazyagent {

// Shell lines that print the probe block (for sandbox_command()).
const std::string& isolation_probe_shell();

struct ProbeReport {
  bool found = false;
  std::vector<std::string> interfaces;     // /sys/class/net ("*" when unreadable)
  std::vector<std::string> netdev;         // /proc/net/dev
  std::string cap_eff, cap_prm, cap_bnd;  // hex, as in /proc/self/status
  std::string no_new_privs;               // "1" when set
  std::string seccomp;                    // 0 none, 1 strict, 2 filter
  std::string root;                       // "read-only" or "writable"
  std::string uid_map;                    // first line of /proc/self/uid_map: "0 HOSTID SIZE"
  std::vector<std::string> env_names;
  EgressReport egress;
};

// Splits the probe block off the front of `output`; `rest` gets the remainder.
ProbeReport take_probe(std::string_view output, std::string* rest);

// What the probe shows that the policy forbids (empty = clean). Under
// runtime "runsc" (gVisor) the probe sees gVisor's kernel: sysfs may be
// unreadable (then /proc/net/dev alone decides), /proc/self/status has no
// NoNewPrivs line (reported as not observable, not as set), and a seccomp
// filter (mode 2) is demanded, since runsc applies one only when told to.
// Any target the egress probe reached is a violation. `egress_rule`: the
// "only lo" interface check gives way to the egress probe (Kubernetes modes
// networkpolicy and runtimeclass: the pod has an eth0 by design), and a
// probe that could not run or finish is a violation.
std::vector<std::string> probe_violations(const ProbeReport& report, const SandboxPolicy& policy,
                                          const std::string& runtime = "runc", bool egress_rule = false);

nlohmann::json probe_to_json(const ProbeReport& report, const std::vector<std::string>& violations);

}  // namespace lazyagent
