// The pure parts of the Kubernetes backend: how the export's documents are
// adapted for a run, the planner log split, pod status reading, owner labels.
#include "catch_compat.h"

#include <nlohmann/json.hpp>

#include "engine/k8s/k8s_engine.h"
#include "store/ownership.h"
#include "policy/sandbox_policy.h"

using namespace lazyagent;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

K8sDocuments sample_docs() {
  K8sDocuments d;
  d.seed_configmap = {{"metadata", {{"name", "r-seed"}, {"labels", {{kLabelRun, "r"}}}}}};
  d.task_configmap = {{"metadata", {{"name", "r-task"}}}};
  d.network_policy = {{"metadata", {{"name", "r-np"}}}};
  ordered_json planner_pod = {{"volumes", {{{"name", "provider"}, {"secret", {{"secretName", "r-provider"}}}},
                                           {{"name", "tmp"}, {"emptyDir", json::object()}}}}};
  d.planner_job = {{"metadata", {{"name", "r-planner"}}}, {"spec", {{"template", {{"metadata", json::object()}, {"spec", planner_pod}}}}}};
  d.sandbox_job = {{"metadata", {{"name", "r-sandbox"}}}, {"spec", {{"template", {{"metadata", json::object()}, {"spec", json::object()}}}}}};
  return d;
}

}  // namespace

TEST_CASE("adapt_documents: owner labels everywhere, the configured Secret, RuntimeClass on the sandbox only") {
  K8sDocuments d = sample_docs();
  K8sRunSettings s;
  s.secret = "my-provider";
  s.runtime_class = "lazyagent-nonet";
  adapt_documents(d, s, "r-1");
  for (const auto* meta : {&d.seed_configmap["metadata"], &d.task_configmap["metadata"], &d.network_policy["metadata"],
                           &d.planner_job["metadata"], &d.sandbox_job["spec"]["template"]["metadata"],
                           &d.planner_job["spec"]["template"]["metadata"]}) {
    CHECK((*meta)["labels"][kLabelRun] == "r-1");
    CHECK((*meta)["labels"].contains(kLabelPid));
    const std::string owner = (*meta)["labels"][kLabelOwner];
    CHECK(owner.find('@') == std::string::npos);  // not a valid label value character
  }
  CHECK(d.sandbox_job["spec"]["template"]["metadata"]["labels"][kLabelRole] == "sandbox");
  CHECK(d.planner_job["spec"]["template"]["metadata"]["labels"][kLabelRole] == "planner");
  CHECK(d.planner_job["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == "my-provider");
  CHECK(d.sandbox_job["spec"]["template"]["spec"]["runtimeClassName"] == "lazyagent-nonet");
  CHECK_FALSE(d.planner_job["spec"]["template"]["spec"].contains("runtimeClassName"));
  CHECK_FALSE(d.planner_job["spec"]["template"]["spec"].contains("hostAliases"));  // no opt-in
  // Nothing about the provider reaches the sandbox.
  CHECK(d.sandbox_job.dump().find("provider") == std::string::npos);
  // Both Jobs carry the configured TTL (the collection that does not rest on the CLI).
  CHECK(d.sandbox_job["spec"]["ttlSecondsAfterFinished"] == 3600);
  K8sDocuments short_ttl = sample_docs();
  s.ttl_seconds_after_finished = 5;
  adapt_documents(short_ttl, s, "r-2");
  CHECK(short_ttl.sandbox_job["spec"]["ttlSecondsAfterFinished"] == 5);
  CHECK(short_ttl.planner_job["spec"]["ttlSecondsAfterFinished"] == 5);
}

TEST_CASE("adapt_documents: the plain-http opt-in adds a hostAlias to the planner only") {
  K8sDocuments d = sample_docs();
  K8sRunSettings s;
  s.plain_http_provider_ip = "10.1.2.3";
  s.runtime_class = "";
  adapt_documents(d, s, "r-1");
  CHECK(json(d.planner_job["spec"]["template"]["spec"]["hostAliases"]) ==
        json::parse(R"([{"ip":"10.1.2.3","hostnames":["host.containers.internal"]}])"));
  CHECK_FALSE(d.sandbox_job["spec"]["template"]["spec"].contains("hostAliases"));
  CHECK_FALSE(d.sandbox_job["spec"]["template"]["spec"].contains("runtimeClassName"));
}

TEST_CASE("owner labels survive the trip through Kubernetes label values") {
  const auto labels = k8s_owner_labels("sandbox", "r-1");
  json j = json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  const auto back = owner_labels_from_k8s(j);
  CHECK(back.at(kLabelOwner) == current_owner().user_host);
  CHECK(owner_alive(back));  // this process
  j[kLabelPid] = "999999999";
  CHECK_FALSE(owner_alive(owner_labels_from_k8s(j)));
}

TEST_CASE("split_planner_log: the patch line and the planner's lines") {
  std::string patch, lines;
  split_planner_log("planner: asking\n{\"files\":[]}\nplanner-summary: {\"model\":\"m\"}\n", &patch, &lines);
  CHECK(patch == "{\"files\":[]}");
  CHECK(lines == "planner: asking\nplanner-summary: {\"model\":\"m\"}\n");
  // A diff (patch.format diff): its lines, as the planner wrote them, between the planner's.
  const std::string diff = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n\n";
  split_planner_log("planner: reply: 9 bytes\n" + diff + "planner: patch accepted (diff): 1 file(s)\nplanner-summary: {}\n",
                    &patch, &lines);
  CHECK(patch == diff);
  CHECK(lines == "planner: reply: 9 bytes\nplanner: patch accepted (diff): 1 file(s)\nplanner-summary: {}\n");
}

TEST_CASE("pod_end: terminated, stuck, still running") {
  auto p = [](json state, std::string phase = "Running") {
    return json{{"status", {{"phase", phase}, {"containerStatuses", {{{"state", state}}}}}}};
  };
  CHECK(pod_end(p({{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}})).exit_code == 137);
  CHECK(pod_end(p({{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}})).reason == "OOMKilled");
  const PodEnd stuck = pod_end(p({{"waiting", {{"reason", "ErrImageNeverPull"}, {"message", "no image"}}}}));
  CHECK_FALSE(stuck.terminated);
  CHECK(stuck.stuck == "ErrImageNeverPull: no image");
  CHECK_FALSE(pod_end(p({{"running", json::object()}})).terminated);
  CHECK_FALSE(pod_end(p({{"waiting", {{"reason", "ContainerCreating"}}}})).terminated);
  CHECK(pod_end(json{{"status", {{"phase", "Failed"}, {"reason", "DeadlineExceeded"}}}}).reason == "DeadlineExceeded");
}

TEST_CASE("pod_end: the seed's init container that cannot pull its image is stuck, not a pod still starting") {
  const json pod = {{"status",
                     {{"phase", "Pending"},
                      {"initContainerStatuses",
                       {{{"name", "seed"},
                         {"state",
                          {{"waiting",
                            {{"reason", "ErrImagePull"},
                             {"message", "x509: certificate signed by unknown authority"}}}}}}}},
                      {"containerStatuses", {{{"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}}}}}};
  const PodEnd e = pod_end(pod);
  CHECK_FALSE(e.terminated);
  CHECK(e.stuck == "init container seed: ErrImagePull: x509: certificate signed by unknown authority");
  json pulling = pod;
  pulling["status"]["initContainerStatuses"][0]["state"] = {{"waiting", {{"reason", "PodInitializing"}}}};
  CHECK(pod_end(pulling).stuck.empty());
}

TEST_CASE("pod_end: an evicted pod is no verdict, whatever its container's exit status") {
  // The kubelet evicts a pod whose disk emptyDir outgrows its sizeLimit; the
  // sandbox's shell then ends with some status (1 seen) that is not the test's.
  const json pod = {{"status",
                     {{"phase", "Failed"},
                      {"reason", "Evicted"},
                      {"message", "Usage of EmptyDir volume \"seed\" exceeds the limit \"79Mi\"."},
                      {"containerStatuses", {{{"state", {{"terminated", {{"exitCode", 1}}}}}}}}}}};
  const PodEnd e = pod_end(pod);
  CHECK(e.terminated);
  CHECK(e.evicted == "Usage of EmptyDir volume \"seed\" exceeds the limit \"79Mi\".");
  json still_running = pod;
  still_running["status"]["containerStatuses"][0]["state"] = {{"running", json::object()}};
  CHECK(pod_end(still_running).terminated);
  CHECK_FALSE(pod_end(still_running).evicted.empty());
  still_running["status"].erase("message");
  CHECK(pod_end(still_running).evicted == "evicted");
  CHECK(pod_end(json{{"status", {{"phase", "Failed"}, {"reason", "DeadlineExceeded"}}}}).evicted.empty());
}

TEST_CASE("pod_end: the container's imageID, for the record's image_digest") {
  const json pod = {{"status",
                     {{"phase", "Succeeded"},
                      {"containerStatuses",
                       {{{"imageID", "sha256:abc"}, {"state", {{"terminated", {{"exitCode", 0}}}}}}}}}}};
  CHECK(pod_end(pod).image_id == "sha256:abc");
}

TEST_CASE("k8s_stored_violations: what the API server stored must be what was sent, nothing weaker added") {
  const json sent = json::parse(R"({"spec": {
      "automountServiceAccountToken": false, "runtimeClassName": "lazyagent-nonet",
      "containers": [{"name": "sandbox", "securityContext": {"runAsNonRoot": true}}],
      "volumes": [{"name": "work", "emptyDir": {"medium": "Memory"}}]}})");
  json stored = sent;
  // Defaulting adds fields; that is fine.
  stored["spec"]["dnsPolicy"] = "None";
  stored["spec"]["containers"][0]["terminationMessagePath"] = "/dev/termination-log";
  stored["spec"]["hostNetwork"] = false;
  CHECK(k8s_stored_violations(sent, stored).empty());

  json webhook = stored;
  webhook["spec"]["automountServiceAccountToken"] = true;
  webhook["spec"]["containers"].push_back({{"name", "sidecar"}});
  webhook["spec"]["volumes"][0]["emptyDir"].erase("medium");
  webhook["spec"]["hostNetwork"] = true;
  webhook["spec"]["containers"][0]["envFrom"] = json::parse(R"([{"secretRef": {"name": "x"}}])");
  webhook["spec"].erase("runtimeClassName");
  const auto v = k8s_stored_violations(sent, webhook);
  CHECK(v == std::vector<std::string>{".spec.automountServiceAccountToken is true, false was sent",
                                      ".spec.containers has 2 entries, not 1",
                                      ".spec.runtimeClassName was dropped",
                                      ".spec.volumes[0].emptyDir.medium was dropped",
                                      ".spec.containers[0].envFrom was added",
                                      ".spec.hostNetwork was added"});
}

TEST_CASE("k8s_egress_targets: the API server and the kubernetes Service as IP addresses, loopback dropped") {
  CHECK(k8s_egress_targets("https://192.0.2.10:6443", "10.96.0.1:443", {}) ==
        std::vector<std::string>{"api=192.0.2.10:6443", "api-service=10.96.0.1:443"});
  CHECK(k8s_egress_targets("https://[fd00::10]", "", {"[fd00::11]:10250", "192.0.2.11:22"}) ==
        std::vector<std::string>{"api=[fd00::10]:443", "config=[fd00::11]:10250", "config=192.0.2.11:22"});
  // The local cluster's API server listens on 127.0.0.1: in the pod that is the pod's own loopback.
  CHECK(k8s_egress_targets("https://127.0.0.1:6443", "", {"localhost:10250"}).empty());
  CHECK(k8s_egress_targets("https://192.0.2.10:6443/prefix", "", {"192.0.2.10:6443"}) ==
        std::vector<std::string>{"api=192.0.2.10:6443", "config=192.0.2.10:6443"});
}

TEST_CASE("k8s_settings_from_config: networkpolicy runs with no RuntimeClass") {
  Config c;
  CHECK(k8s_settings_from_config(c).runtime_class == "lazyagent-nonet");
  CHECK(k8s_settings_from_config(c).isolation == "runtime-nonet");
  c.k8s.isolation = "networkpolicy";
  CHECK(k8s_settings_from_config(c).runtime_class.empty());
  c.k8s.isolation = "runtimeclass";
  c.k8s.runtime_class = "gvisor";
  c.k8s.egress_probe_targets = {"192.0.2.11:22"};
  CHECK(k8s_settings_from_config(c).runtime_class == "gvisor");
  CHECK(k8s_settings_from_config(c).egress_probe_targets == std::vector<std::string>{"192.0.2.11:22"});
}

TEST_CASE("k8s_stored_violations: an init container that was sent (the seed image) is compared, not refused, one "
          "added is refused") {
  const json sent = json::parse(R"({"spec": {
      "initContainers": [{"name": "seed", "image": "127.0.0.1:25500/lazyagent-seed@sha256:aa"}],
      "containers": [{"name": "sandbox"}]}})");
  json stored = sent;
  stored["spec"]["initContainers"][0]["terminationMessagePath"] = "/dev/termination-log";
  CHECK(k8s_stored_violations(sent, stored).empty());
  json swapped = stored;
  swapped["spec"]["initContainers"][0]["image"] = "127.0.0.1:25500/lazyagent-seed:r-1";
  CHECK(k8s_stored_violations(sent, swapped) ==
        std::vector<std::string>{".spec.initContainers[0].image is \"127.0.0.1:25500/lazyagent-seed:r-1\", "
                                 "\"127.0.0.1:25500/lazyagent-seed@sha256:aa\" was sent"});
  json added = stored;
  added["spec"]["initContainers"].push_back({{"name", "extra"}});
  CHECK(k8s_stored_violations(sent, added) ==
        std::vector<std::string>{".spec.initContainers has 2 entries, not 1"});
  json none = sent;
  none["spec"].erase("initContainers");
  CHECK(k8s_stored_violations(none, stored) == std::vector<std::string>{".spec.initContainers was added"});
}
