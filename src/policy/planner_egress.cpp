#include "policy/planner_egress.h"

#include <algorithm>
#include <sstream>

#include "util/ip_address.h"

namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// The probe prints [v6]:port and v4:port; compare in that form.
std::string probe_form(const std::string& hp) {
  std::string host, port;
  if (!split_host_port(hp, &host, &port)) return hp;
  return (is_ipv6_address(host) ? "[" + host + "]" : host) + ":" + port;
}

}  // namespace

std::string planner_egress_probe_script() {
  return "p=lazyagent-probe\nset -- \"\" \"\" \"\" \"$1\" always\nexec >" + std::string(kPlannerEgressFile) + "\n" +
         egress_probe_shell();
}

ordered_json planner_egress_rules(const std::vector<std::string>& allowed) {
  ordered_json rules = ordered_json::array();
  for (const auto& hp : allowed) {
    std::string host, port;
    if (!split_host_port(hp, &host, &port)) continue;
    const std::string cidr = host + (is_ipv6_address(host) ? "/128" : "/32");
    rules.push_back({{"to", {{{"ipBlock", {{"cidr", cidr}}}}}},
                     {"ports", {{{"protocol", "TCP"}, {"port", std::stoi(port)}}}}});
  }
  return rules;
}

EgressReport parse_egress_output(const std::string& output) {
  static const std::string kPrefix = "lazyagent-probe: ";
  EgressReport r;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    const std::string kv = line.substr(kPrefix.size());
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    take_egress_line(kv.substr(0, eq), kv.substr(eq + 1), &r);
  }
  return r;
}

PlannerEgressVerdict judge_planner_egress(const EgressReport& r, const std::vector<std::string>& allowed) {
  PlannerEgressVerdict v;
  std::vector<std::string> ok;
  for (const auto& a : allowed) ok.push_back(probe_form(a));
  for (const auto& a : r.attempts) {
    if (!a.reached()) continue;
    if (a.proto == "tcp" && std::find(ok.begin(), ok.end(), a.address) != ok.end()) continue;  // the provider
    v.findings.push_back("reached " + a.target + " " + a.proto + " " + a.address + " (" + a.outcome + ")");
  }
  if (!r.finished) {
    v.findings.push_back(r.runner == "none" ? "the egress probe could not run (no python3 in the probe's image)"
                         : r.runner.empty() ? "the egress probe left no output"
                                            : "the egress probe did not finish");
  }
  v.enforced = v.findings.empty();
  return v;
}

json PlannerEgressVerdict::to_json(const EgressReport& r, const std::vector<std::string>& allowed) const {
  json j = egress_to_json(r);
  j["state"] = enforced ? "enforced" : "not enforced";
  j["allowed"] = allowed;
  j["findings"] = findings;
  return j;
}

}  // namespace lazyagent
