// The planner's tool loop on Kubernetes (issue 32 item 3), on the real local
// cluster and registry: with k8s.registry the planner pod gets the tools'
// snapshot as a seed image pulled by digest, and the scripted provider reads
// a file through the loop (its script checks the tool result: a wrong one is
// a 400 and the run fails) before it submits the fix; without a registry the
// planner asks with the one-shot prompt and the run says why.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include "harness.h"
#include "k8s_fixtures.h"
#include "engine/k8s/k8s_seed_image.h"
#include "engine/k8s/oci_registry.h"
#include "policy/sandbox_policy.h"

using nlohmann::json;
using namespace it;
using namespace lazyagent;

namespace {

// A reply calling one tool, as a script gives it (parse_stub_script makes the protocol's tool_calls).
StubReply tool_call(const std::string& name, const json& args, const std::vector<std::string>& require_last = {}) {
  json reply = {{"tool_calls", {{{"name", name}, {"arguments", args}}}}};
  if (!require_last.empty()) reply["require_last"] = require_last;
  auto s = parse_stub_script(json{{"api_key", kKey}, {"replies", {reply}}}.dump());
  REQUIRE(s.ok());
  return s->replies.at(0);
}

const std::string kLoopYaml = "planner:\n  tools: true\n  max_turns: 4\n";

}  // namespace

TEST_CASE("k8s planner loop: with the registry the planner pod reads the seed through its tools (a snapshot "
          "image pulled by digest, mounted read-only), submits the fix, it passes, nothing is left",
          "[k8s][registry][loop]") {
  const json fix = json::parse(fixing_patch());
  Provider p({tool_call("read_file", {{"path", "calculator.py"}}),
              // The file's lines as the pod's tools read them from the snapshot: else a 400.
              tool_call("submit_patch", {{"files", fix["files"]}},
                        {"8: def add(a: float, b: float) -> float:", "10:     return a - b"})},
             "  registry: " + registry_address() + "\n  registry_plain_http: true\n" + kLoopYaml);
  Recorder jobs(kK8sJobs, "io.lazyagent.role=planner");
  CliResult r = p.run();
  const std::vector<json> seen = jobs.stop();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(p.stub().requests() == 2);
  const json loop = j["planner"]["loop"];
  CHECK(loop["turns"] == 2);
  CHECK(loop["stop_reason"] == "submitted");
  REQUIRE(loop["tool_calls"].size() == 2);
  CHECK(loop["tool_calls"][0]["name"] == "read_file");
  CHECK(loop["tool_calls"][0]["ok"] == true);
  CHECK(loop["tool_calls"][0]["result_bytes"].get<int>() > 300);
  CHECK(loop["tool_calls"][1]["name"] == "submit_patch");
  // The tool result the provider received is the file's content.
  const auto bodies = p.stub().request_log();
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[1].find("A tiny calculator: the demo seed for lazyagent-oci.") != std::string::npos);
  CHECK(bodies[1].find("10:     return a - b") != std::string::npos);
  // The planner's transcript (task logs) shows the call.
  CliResult logs = p.cli({"task", "logs", j["planner"]["task_id"].get<std::string>()});
  CHECK(logs.out.find("tool: turn 1: read_file {\"path\":\"calculator.py\"} -> ") != std::string::npos);

  // The snapshot went as an image by digest, verified before the pod started, and is gone.
  const json snap = j["planner"]["snapshot"];
  INFO(snap.dump());
  REQUIRE(snap["transport"] == "registry");
  CHECK(snap["tool_loop"] == true);
  CHECK(snap["mount"] == "/seed");
  CHECK(snap["files"] == 3);  // README.md, calculator.py, test_calculator.py
  CHECK(snap.contains("verify_ms"));
  const std::string digest = snap["digest"];
  CHECK(snap["image"] == registry_address() + "/" + kSeedImageRepo + "@" + digest);
  // The sandbox's private copy is another image (its own files and modes).
  CHECK(j["policy"]["k8s"]["seed"]["digest"] != digest);
  RegistryConnection rc;
  rc.address = registry_address();
  rc.plain_http = true;
  RegistryClient reg(rc);
  auto m = reg.get_manifest(kSeedImageRepo, digest, kOciManifestType);
  REQUIRE(m.ok());
  CHECK_FALSE(m->has_value());

  // The planner Job as the API server stored it: the copier by digest, the
  // snapshot read-only at /seed, no Secret but the provider's.
  bool saw = false;
  for (const auto& job : seen) {
    if (job.value("/metadata/labels/io.lazyagent.run"_json_pointer, std::string()) != j["run_id"].get<std::string>()) continue;
    saw = true;
    const json pod = job["spec"]["template"]["spec"];
    REQUIRE(pod["initContainers"].size() == 1);
    CHECK(pod["initContainers"][0]["image"] == snap["image"]);
    const json c = pod["containers"][0];
    CHECK(c["args"].back() == "/seed");
    bool mounted = false;
    for (const auto& mnt : c["volumeMounts"]) {
      if (mnt["mountPath"] != "/seed") continue;
      mounted = true;
      CHECK(mnt["readOnly"] == true);
    }
    CHECK(mounted);
    int secrets = 0;
    for (const auto& v : pod["volumes"]) {
      if (!v.contains("secret")) continue;
      ++secrets;
      CHECK(v["secret"]["secretName"].get<std::string>().rfind("lazyagent-it-provider-", 0) == 0);
    }
    CHECK(secrets == 1);
    CHECK(pod.contains("imagePullSecrets") == false);
    CHECK(pod.dump().find("hostPath") == std::string::npos);
  }
  CHECK(saw);
  K8sClient k = client();
  CHECK(leftovers(k, std::string(kLabelRun) + "=" + j["run_id"].get<std::string>()) == 0);
  auto tags = reg.tags(kSeedImageRepo);
  REQUIRE(tags.ok());
  for (const auto& t : *tags) CHECK(t.find(j["run_id"].get<std::string>()) == std::string::npos);
}

TEST_CASE("k8s planner loop: without k8s.registry the planner asks with the one-shot prompt, and the run says why",
          "[k8s][loop]") {
  StubReply one_shot;
  one_shot.content = json::parse(fixing_patch()).dump();
  Provider p({one_shot}, kLoopYaml);
  CliResult r = p.run();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  const json snap = j["planner"]["snapshot"];
  CHECK(snap["transport"] == "none");
  CHECK(snap["tool_loop"] == false);
  const std::string why =
      "planner.tools is on but k8s.registry is not set: the planner pod gets no snapshot of the seed for its tools, "
      "so it asks with the one-shot prompt (set k8s.registry to run the tool loop on Kubernetes)";
  CHECK(snap["reason"] == why);
  CHECK(r.err.find("planner: " + why) != std::string::npos);
  CHECK(j["planner"].contains("loop") == false);
  REQUIRE(p.stub().request_log().size() == 1);
  CHECK(p.stub().request_log()[0].find("\"tools\"") == std::string::npos);  // the one-shot request
}
