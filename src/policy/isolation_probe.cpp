#include "policy/isolation_probe.h"

#include <algorithm>
#include <sstream>

namespace lazyagent {

using nlohmann::json;

namespace {

constexpr std::string_view kPrefix = "lazyagent-probe: ";
constexpr std::string_view kEnd = "lazyagent-probe: end";

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

const std::string& isolation_probe_shell() {
  // Builtins only: for/case/read/printf/export. `export -p` lists the
  // exported variables as "export NAME=..." (dash) or "export NAME" lines.
  static const std::string shell = R"sh(p=lazyagent-probe
n=; for i in /sys/class/net/*; do n="$n${i##*/},"; done; printf '%s: ifaces=%s\n' $p "$n"
d=; while read -r l; do case "$l" in *:*) d="$d${l%%:*},";; esac; done </proc/net/dev; printf '%s: netdev=%s\n' $p "$d"
while read -r k v; do case "$k" in CapEff:|CapPrm:|CapBnd:|NoNewPrivs:|Seccomp:) printf '%s: %s=%s\n' $p "${k%:}" "$v";; esac; done </proc/self/status
read -r a b c </proc/self/uid_map; printf '%s: uid_map=%s %s %s\n' $p "$a" "$b" "$c"
if ( : >/.lazyagent-probe ) 2>/dev/null; then printf '%s: root=writable\n' $p; else printf '%s: root=read-only\n' $p; fi
e=; for w in $(export -p | while read -r x kv; do printf '%s\n' "${kv%%=*}"; done); do e="$e$w,"; done; printf '%s: env=%s\n' $p "$e"
%EGRESS%printf '%s: end\n' $p
)sh";
  static const std::string with_egress = [] {
    std::string s = shell;
    s.replace(s.find("%EGRESS%"), 8, egress_probe_shell());
    return s;
  }();
  return with_egress;
}

ProbeReport take_probe(std::string_view output, std::string* rest) {
  ProbeReport r;
  const auto end = output.find(kEnd);
  // The block must start the output: anything else was printed by someone else.
  if (end == std::string_view::npos || output.substr(0, kPrefix.size()) != kPrefix) {
    if (rest) *rest = std::string(output);
    return r;
  }
  auto after = output.find('\n', end);
  after = after == std::string_view::npos ? output.size() : after + 1;
  std::stringstream block{std::string(output.substr(0, end))};
  std::string line;
  while (std::getline(block, line)) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    const std::string kv = line.substr(kPrefix.size());
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "ifaces") r.interfaces = split_commas(v);
    else if (k == "netdev") r.netdev = split_commas(v);
    else if (k == "CapEff") r.cap_eff = v;
    else if (k == "CapPrm") r.cap_prm = v;
    else if (k == "CapBnd") r.cap_bnd = v;
    else if (k == "NoNewPrivs") r.no_new_privs = v;
    else if (k == "Seccomp") r.seccomp = v;
    else if (k == "root") r.root = v;
    else if (k == "uid_map") r.uid_map = v;
    else if (k == "env") r.env_names = split_commas(v);
    else take_egress_line(k, v, &r.egress);
  }
  r.found = true;
  if (rest) *rest = std::string(output.substr(after));
  return r;
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string all;
  for (const auto& i : v) all += (all.empty() ? "" : ",") + i;
  return all;
}

// gVisor's sysfs may refuse /sys/class/net (EINVAL): the shell's glob then
// stays unexpanded and the probe prints "*".
bool sysfs_unreadable(const ProbeReport& r) {
  return r.interfaces == std::vector<std::string>{"*"};
}

}  // namespace

std::vector<std::string> probe_violations(const ProbeReport& r, const SandboxPolicy& policy,
                                          const std::string& runtime, bool egress_rule) {
  std::vector<std::string> v;
  if (!r.found) return {"the isolation probe did not report (the sandbox script did not run as built)"};
  const bool gvisor = runtime == "runsc";
  const std::vector<std::string> lo = {"lo"};
  // Two views of the interfaces: sysfs and the kernel's /proc/net/dev. Both
  // must show only lo; under gVisor an unreadable sysfs leaves /proc/net/dev.
  if (!egress_rule) {
    if (r.interfaces != lo && !(gvisor && sysfs_unreadable(r))) {
      v.push_back("network interfaces other than lo: " + join(r.interfaces));
    }
    if (r.netdev != lo) v.push_back("network interfaces in /proc/net/dev other than lo: " + join(r.netdev));
  }
  for (auto& e : egress_violations(r.egress, egress_rule)) v.push_back(std::move(e));
  auto zero = [](const std::string& hex) { return !hex.empty() && hex.find_first_not_of('0') == std::string::npos; };
  if (!zero(r.cap_eff) || !zero(r.cap_prm) || !zero(r.cap_bnd)) {
    v.push_back("capabilities held: CapEff=" + r.cap_eff + " CapPrm=" + r.cap_prm + " CapBnd=" + r.cap_bnd);
  }
  // gVisor's /proc/self/status has no NoNewPrivs line: absent is "not
  // observable" there (probe_to_json says so), never "set". A value other
  // than 1 is a violation under every runtime.
  if (r.no_new_privs != "1" && !(gvisor && r.no_new_privs.empty())) v.push_back("no_new_privs is not set");
  // Under gVisor the OCI profile is applied only with --oci-seccomp.
  if (r.seccomp != "2") {
    const std::string mode = r.seccomp.empty() ? std::string("absent") : r.seccomp;
    v.push_back(gvisor ? "no seccomp filter in force (Seccomp=" + mode +
                             "; start the runsc service with --runtime-flag oci-seccomp)"
                       : "no seccomp filter (Seccomp=" + mode + ")");
  }
  const std::string want_map = "0 " + std::to_string(policy.userns.host_id) + " " + std::to_string(policy.userns.size);
  if (policy.userns.enabled && r.uid_map != want_map) {
    v.push_back("the sandbox's uid map is '" + r.uid_map + "', not '" + want_map + "' (its root must not be host root)");
  }
  if (r.root != "read-only") v.push_back("the root filesystem is writable");
  for (const auto& name : r.env_names) {
    // The probing shell itself adds PWD/OLDPWD; podman adds HOSTNAME.
    if (!policy.env.count(name) && name != "PWD" && name != "OLDPWD" && name != "HOSTNAME") {
      v.push_back("environment variable " + name + " is not on the allowlist");
    }
  }
  return v;
}

json probe_to_json(const ProbeReport& r, const std::vector<std::string>& violations) {
  json j{{"interfaces", r.interfaces}, {"netdev", r.netdev},         {"cap_eff", r.cap_eff},
         {"cap_prm", r.cap_prm},       {"cap_bnd", r.cap_bnd},       {"no_new_privs", r.no_new_privs == "1"},
         {"seccomp", r.seccomp},       {"root", r.root},             {"env_names", r.env_names},
         {"uid_map", r.uid_map},
         {"violations", violations}};
  // What the probe could not see, said as such rather than as a value.
  json unseen = json::array();
  if (r.found && r.no_new_privs.empty()) {
    j["no_new_privs"] = nullptr;
    unseen.push_back("no_new_privs (not reported in /proc/self/status)");
  }
  if (sysfs_unreadable(r)) unseen.push_back("interfaces via /sys/class/net (unreadable; judged by /proc/net/dev)");
  if (r.found && !r.egress.finished && r.egress.runner != kEgressNotNeeded) {
    unseen.push_back(r.egress.runner == "none" ? "egress (the sandbox image has no python3 to run the egress probe)"
                                               : "egress (the egress probe did not finish)");
  }
  j["egress"] = egress_to_json(r.egress);
  if (!unseen.empty()) j["not_observable"] = unseen;
  return j;
}

}  // namespace lazyagent
