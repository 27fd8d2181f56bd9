// The planner pod's egress (policy/planner_egress.h): the policy's rules,
// the config's checks, the probe's output judged against the allowed
// addresses, the Job's init container and arguments, and `plan` refusing
// before it reads any secret when the policy is required and not enforced.
// The probe lines are the local cluster's captures of egress_probe_test.cpp
// (bridge CNI; the node's iptables dropping the pod's egress) with the
// provider's address added as the planner pod's probe sees it.
#include "catch_compat.h"

#include <fstream>

#include "cli/cli.h"
#include "config.h"
#include "engine/k8s/k8s_engine.h"
#include "store/ownership.h"
#include "policy/planner_egress.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// The node drops everything but the provider (10.88.0.1:18080).
const std::string kEnforced =
    "lazyagent-probe: egress_runner=python3\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:22 timeout\n"
    "lazyagent-probe: egress=gateway udp 10.244.91.1:53 timeout\n"
    "lazyagent-probe: egress=lookup udp kubernetes.default@10.255.255.53 timeout\n"
    "lazyagent-probe: egress=api tcp 192.0.2.2:6443 timeout\n"
    "lazyagent-probe: egress=provider tcp 10.88.0.1:18080 connected\n"
    "lazyagent-probe: egress=external tcp [2606:4700:4700::1111]:443 unreachable\n"
    "lazyagent-probe: egress=dns any 127.0.0.1 loopback\n"
    "lazyagent-probe: egress_done=7 1002ms\n";

// The bridge CNI: nothing enforced.
const std::string kBridge =
    "lazyagent-probe: egress_runner=python3\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:22 refused\n"
    "lazyagent-probe: egress=gateway tcp 10.244.91.1:10250 connected\n"
    "lazyagent-probe: egress=lookup udp example.com@10.255.255.53 resolved:93.184.215.14\n"
    "lazyagent-probe: egress=api tcp 192.0.2.2:6443 timeout\n"
    "lazyagent-probe: egress=provider tcp 10.88.0.1:18080 connected\n"
    "lazyagent-probe: egress=lookup:example.com tcp 93.184.215.14:443 timeout\n"
    "lazyagent-probe: egress_done=6 2004ms\n";

}  // namespace

TEST_CASE("planner egress: enforced when nothing but the allowed address was reached") {
  const EgressReport r = parse_egress_output("planner: noise\n" + kEnforced);
  REQUIRE(r.finished);
  CHECK(r.ms == 1002);
  const auto v = judge_planner_egress(r, {"10.88.0.1:18080"});
  CHECK(v.enforced);
  CHECK(v.findings.empty());
  const json j = v.to_json(r, {"10.88.0.1:18080"});
  CHECK(j["state"] == "enforced");
  CHECK(j["allowed"] == json::array({"10.88.0.1:18080"}));
  CHECK(j["reached"] == json::array({"provider tcp 10.88.0.1:18080"}));  // the probe's own list keeps it
  // The same output with another provider address: the connection is egress.
  const auto other = judge_planner_egress(r, {"10.88.0.2:18080"});
  CHECK_FALSE(other.enforced);
  CHECK(other.findings == std::vector<std::string>{"reached provider tcp 10.88.0.1:18080 (connected)"});
}

TEST_CASE("planner egress: not enforced on a CNI that ignores NetworkPolicy, every reached target named") {
  const EgressReport r = parse_egress_output(kBridge);
  const auto v = judge_planner_egress(r, {"10.88.0.1:18080"});
  CHECK_FALSE(v.enforced);
  CHECK(v.findings == std::vector<std::string>{
                          "reached gateway tcp 10.244.91.1:22 (refused)",
                          "reached gateway tcp 10.244.91.1:10250 (connected)",
                          "reached lookup udp example.com@10.255.255.53 (resolved:93.184.215.14)"});
  CHECK(v.to_json(r, {"10.88.0.1:18080"})["state"] == "not enforced");
}

TEST_CASE("planner egress: a probe that left nothing, could not run or did not finish is not enforced") {
  CHECK(judge_planner_egress(parse_egress_output(""), {}).findings ==
        std::vector<std::string>{"the egress probe left no output"});
  CHECK(judge_planner_egress(parse_egress_output("lazyagent-probe: egress_runner=none\n"), {}).findings ==
        std::vector<std::string>{"the egress probe could not run (no python3 in the probe's image)"});
  std::string cut = kEnforced.substr(0, kEnforced.find("lazyagent-probe: egress_done"));
  const auto v = judge_planner_egress(parse_egress_output(cut), {"10.88.0.1:18080"});
  CHECK_FALSE(v.enforced);
  CHECK(v.findings == std::vector<std::string>{"the egress probe did not finish"});
}

TEST_CASE("planner egress: IPv6 allowed entries match the probe's bracketed form") {
  const EgressReport r = parse_egress_output(
      "lazyagent-probe: egress_runner=python3\n"
      "lazyagent-probe: egress=provider tcp [fd00::5]:443 connected\n"
      "lazyagent-probe: egress_done=1 3ms\n");
  CHECK(judge_planner_egress(r, {"[fd00::5]:443"}).enforced);
  CHECK(planner_egress_rules({"[fd00::5]:443", "10.1.2.3:8080"}) ==
        ordered_json::parse(R"([{"to":[{"ipBlock":{"cidr":"fd00::5/128"}}],"ports":[{"protocol":"TCP","port":443}]},
                                {"to":[{"ipBlock":{"cidr":"10.1.2.3/32"}}],"ports":[{"protocol":"TCP","port":8080}]}])"));
}

TEST_CASE("planner egress: config takes IP addresses only, and required needs the list") {
  auto ok = parse_config("k8s:\n  planner_egress: ['10.88.0.1:18080', '[fd00::1]:443']\n  planner_egress_required: true\n",
                         "t.yaml", "/tmp");
  REQUIRE(ok);
  CHECK(ok->k8s.planner_egress == std::vector<std::string>{"10.88.0.1:18080", "[fd00::1]:443"});
  CHECK(ok->k8s.planner_egress_required);
  auto name = parse_config("k8s:\n  planner_egress: ['api.example.com:443']\n", "t.yaml", "/tmp");
  REQUIRE_FALSE(name);
  CHECK(name.error().message.find("k8s.planner_egress[0]: 'api.example.com' is not an IP address: a NetworkPolicy "
                                  "allows addresses, not names") != std::string::npos);
  auto port = parse_config("k8s:\n  planner_egress: ['10.0.0.1:0']\n", "t.yaml", "/tmp");
  REQUIRE_FALSE(port);
  CHECK(port.error().message.find("k8s.planner_egress[0]: expected HOST:PORT") != std::string::npos);
  auto alone = parse_config("k8s:\n  planner_egress_required: true\n", "t.yaml", "/tmp");
  REQUIRE_FALSE(alone);
  CHECK(alone.error().message.find("k8s.planner_egress_required: needs k8s.planner_egress") != std::string::npos);
}

TEST_CASE("planner egress: the Job gets the probe as an init container and the NetworkPolicy selects its pod") {
  K8sDocuments d;
  d.planner_job = ordered_json::parse(R"({"metadata": {"name": "r-planner"},
    "spec": {"template": {"metadata": {"labels": {"io.lazyagent.run": "r-1", "io.lazyagent.role": "planner"}},
      "spec": {"containers": [{"name": "planner", "args": ["plan"],
                               "securityContext": {"readOnlyRootFilesystem": true}, "volumeMounts": []}],
               "volumes": []}}}})");
  d.sandbox_job = ordered_json::parse(
      R"({"spec": {"template": {"spec": {"containers": [{"image": "localhost/lazyagent-sandbox:x"}]}}}})");
  K8sRunSettings s;
  s.ns = "lazyagent";
  CHECK(add_planner_egress(d, s, "r-1", "api=10.96.0.1:443").is_null());  // not configured: nothing
  CHECK_FALSE(d.planner_job["spec"]["template"]["spec"].contains("initContainers"));
  s.planner_egress = {"10.88.0.1:18080"};
  s.planner_egress_required = true;
  const ordered_json np = add_planner_egress(d, s, "r-1", "api=10.96.0.1:443");
  const ordered_json& pod = d.planner_job["spec"]["template"]["spec"];
  const ordered_json& probe = pod["initContainers"][0];
  CHECK(probe["image"] == "localhost/lazyagent-sandbox:x");
  CHECK(probe["command"][4] == "api=10.96.0.1:443");
  CHECK(probe["command"][2].get<std::string>().find("exec >/egress/probe.txt") != std::string::npos);
  CHECK(probe["securityContext"]["readOnlyRootFilesystem"] == true);
  CHECK(pod["containers"][0]["args"] ==
        ordered_json::array({"plan", "--egress-report", "/egress/probe.txt", "--egress-allow", "10.88.0.1:18080",
                             "--egress-required"}));
  CHECK(pod["volumes"][0]["name"] == "egress");
  CHECK(np["metadata"]["name"] == "r-1-planner-egress");
  CHECK(np["metadata"]["labels"][kLabelRole] == "planner");  // removed with the planner's objects
  CHECK(np["metadata"]["labels"][kLabelRun] == "r-1");
  CHECK(np["spec"]["podSelector"]["matchLabels"] == d.planner_job["spec"]["template"]["metadata"]["labels"]);
  CHECK(np["spec"]["policyTypes"] == ordered_json::array({"Ingress", "Egress"}));
  CHECK(np["spec"]["egress"] == planner_egress_rules({"10.88.0.1:18080"}));
}

TEST_CASE("planner egress: plan refuses before reading any secret when required and not enforced") {
  Tmp tmp;
  const std::string report = tmp.path + "/probe.txt";
  std::ofstream(report) << kBridge;
  // No secrets directory: a refusal must come first (exit 4), a pass reaches the secrets (exit 2).
  CHECK(cmd_plan({"--egress-report", report, "--egress-allow", "10.88.0.1:18080", "--egress-required",
                  "--secrets-dir", tmp.path + "/none"}) == kExitRefused);
  CHECK(cmd_plan({"--egress-report", report, "--egress-allow", "10.88.0.1:18080", "--secrets-dir",
                  tmp.path + "/none"}) == kExitUsage);
  std::ofstream(report) << kEnforced;
  CHECK(cmd_plan({"--egress-report", report, "--egress-allow", "10.88.0.1:18080", "--egress-required",
                  "--secrets-dir", tmp.path + "/none"}) == kExitUsage);
}
