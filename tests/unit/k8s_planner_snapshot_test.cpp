// The planner's tool loop on Kubernetes (issue 32 item 3): the planner pod's
// manifest with the tools' snapshot as a seed image (export_k8s.h, the
// engine's adapt_documents and add_planner_egress), and the one snapshot
// reader both engines use (contract/planner_snapshot.h).
#include "catch_compat.h"

#include <algorithm>
#include <set>

#include "contract/planner_snapshot.h"
#include "contract/planner_task.h"
#include "engine/k8s/k8s_engine.h"
#include "export/export_k8s.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

const std::string kImage =
    "127.0.0.1:5000/lazyagent-seed@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

SeedSnapshot loop_seed() {
  SeedSnapshot s;
  s.root = "/home/user/project";
  s.sha256 = "5eed";
  using K = SeedEntry::Kind;
  auto file = [](const std::string& path, const std::string& data, unsigned mode = 0644) {
    SeedEntry e{path, K::kFile, mode, data};
    e.size = data.size();
    return e;
  };
  s.entries = {file("calculator.py", "def add(a, b):\n    return a - b\n"),
               {"docs", K::kDir, 0755, ""},
               file("docs/big.txt", std::string(64, 'x')),
               {"link", K::kSymlink, 0777, "/etc/passwd"},
               {"pkg", K::kDir, 0755, ""},
               file("pkg/run.sh", "#!/bin/sh\n", 0755),
               file("test_calculator.py", "import unittest\n")};
  return s;
}

ExportInput planner_input(const std::string& snapshot_image) {
  ExportInput in;
  in.config.test_command = "python3 -m unittest -v";
  in.policy = policy_from_config(in.config, 120);
  in.planner = planner_request_from_config(in.config);
  in.seed = loop_seed();
  // The sandbox's ConfigMap (built with the documents) carries no symlink: the planner's snapshot has none either.
  in.seed.entries.erase(std::remove_if(in.seed.entries.begin(), in.seed.entries.end(),
                                       [](const SeedEntry& e) { return e.kind == SeedEntry::Kind::kSymlink; }),
                        in.seed.entries.end());
  in.name = "lz";
  in.k8s_namespace = "lz-ns";
  in.k8s_planner_snapshot_image = snapshot_image;
  in.k8s_planner_snapshot_bytes = 40 << 20;
  return in;
}

K8sDocuments planner_documents(const std::string& snapshot_image, const K8sRunSettings& s = {}) {
  auto d = k8s_documents(planner_input(snapshot_image));
  INFO((d ? "" : d.error().message));
  REQUIRE(d.ok());
  adapt_documents(*d, s, "lz");
  return *d;
}

// Every Secret the pod names anywhere: volumes, projected sources, env, envFrom, image pull Secrets.
std::set<std::string> secrets_named(const json& pod) {
  std::set<std::string> out;
  for (const auto& v : pod.value("volumes", json::array())) {
    if (v.contains("secret")) out.insert("volume:" + v["secret"].value("secretName", ""));
    if (v.contains("projected")) out.insert("projected:" + v.value("name", ""));
  }
  for (const char* list : {"containers", "initContainers"}) {
    for (const auto& c : pod.value(list, json::array())) {
      for (const auto& e : c.value("env", json::array())) {
        if (e.contains("valueFrom")) out.insert("env:" + e.value("name", ""));
      }
      if (c.contains("envFrom")) out.insert("envFrom:" + c.value("name", ""));
    }
  }
  for (const auto& p : pod.value("imagePullSecrets", json::array())) out.insert("pull:" + p.value("name", ""));
  return out;
}

}  // namespace

TEST_CASE("k8s planner pod with the snapshot: an init container pulls it by digest into an emptyDir the planner "
          "mounts read-only at /seed, the provider Secret is the only Secret") {
  K8sRunSettings s;
  s.secret = "my-provider";
  const K8sDocuments d = planner_documents(kImage, s);
  const json pod = json(d.planner_job)["spec"]["template"]["spec"];
  INFO(pod.dump(2));
  REQUIRE(pod["initContainers"].size() == 1);
  const json init = pod["initContainers"][0];
  CHECK(init["image"] == kImage);  // by digest, never a tag
  CHECK(init["command"] == json({"/bin/busybox", "cp", "-R", "/seed/.", "/out/"}));
  CHECK(init["volumeMounts"] == json::array({{{"name", "seed"}, {"mountPath", "/out"}}}));
  CHECK(init["securityContext"]["readOnlyRootFilesystem"] == true);
  CHECK(init["securityContext"]["allowPrivilegeEscalation"] == false);
  CHECK(init["securityContext"]["capabilities"]["drop"] == json::array({"ALL"}));
  CHECK(init.contains("env") == false);

  const json c = pod["containers"][0];
  CHECK(c["args"] == json({"plan", "--task", "/task/task.json", "--secrets-dir", "/run/secrets", "--snapshot",
                           "/seed"}));
  CHECK(c["volumeMounts"].back() == json({{"name", "seed"}, {"mountPath", "/seed"}, {"readOnly", true}}));
  // Only the init container writes the emptyDir; the planner's mounts are read-only but its /tmp.
  for (const auto& m : c["volumeMounts"]) CHECK((m.value("readOnly", false) || m["name"] == "tmp"));
  const json seed_volume = pod["volumes"].back();
  CHECK(seed_volume["name"] == "seed");
  CHECK(seed_volume["emptyDir"]["sizeLimit"] == "66Mi");  // 40 MiB on disk * 5/4 + 16 MiB
  CHECK(seed_volume["emptyDir"].contains("medium") == false);  // the node's disk, not the planner's memory
  CHECK(secrets_named(pod) == std::set<std::string>{"volume:my-provider"});
  const std::string text = pod.dump();
  CHECK(text.find("hostPath") == std::string::npos);
  CHECK(text.find("lz-seed") == std::string::npos);  // no seed ConfigMap
  CHECK(pod["automountServiceAccountToken"] == false);
}

TEST_CASE("k8s planner pod without the snapshot (no k8s.registry): no init container, no --snapshot, no seed "
          "volume") {
  const K8sDocuments d = planner_documents("");
  const json pod = json(d.planner_job)["spec"]["template"]["spec"];
  CHECK(pod.contains("initContainers") == false);
  CHECK(pod["containers"][0]["args"] == json({"plan", "--task", "/task/task.json", "--secrets-dir", "/run/secrets"}));
  for (const auto& v : pod["volumes"]) CHECK(v["name"] != "seed");
}

TEST_CASE("k8s planner pod with the snapshot and planner_egress: both init containers, the copier first") {
  K8sRunSettings s;
  s.planner_egress = {"10.0.0.1:443"};
  K8sDocuments d = planner_documents(kImage, s);
  const auto np = add_planner_egress(d, s, "lz", "api=10.0.0.2:6443");
  CHECK(np.is_object());
  const json pod = json(d.planner_job)["spec"]["template"]["spec"];
  REQUIRE(pod["initContainers"].size() == 2);
  CHECK(pod["initContainers"][0]["image"] == kImage);
  CHECK(pod["initContainers"][1]["name"] == "egress-probe");
  const json args = pod["containers"][0]["args"];
  CHECK(std::find(args.begin(), args.end(), json("--snapshot")) != args.end());
  CHECK(std::find(args.begin(), args.end(), json("--egress-report")) != args.end());
  CHECK(secrets_named(pod) == std::set<std::string>{"volume:lazyagent-provider"});
}

TEST_CASE("planner_snapshot: the seed's directories and regular files, read-only, no symlink, over the bounds left "
          "out, the same for both engines but the prefix") {
  const SeedSnapshot seed = loop_seed();
  std::vector<std::string> left;
  const auto k8s = planner_snapshot(seed, "", 32, 1 << 20, &left);
  std::vector<std::string> paths;
  for (const auto& e : k8s) {
    paths.push_back(e.path + (e.directory ? "/" : ""));
    CHECK(e.mode == (e.directory ? 0755u : 0444u));
  }
  CHECK(paths == std::vector<std::string>{"calculator.py", "docs/", "pkg/", "pkg/run.sh", "test_calculator.py"});
  CHECK(left == std::vector<std::string>{"docs/big.txt"});  // 64 bytes, over the 32-byte file bound
  CHECK(k8s[0].content == "def add(a, b):\n    return a - b\n");

  const auto podman = planner_snapshot(seed, kSnapshotUploadDir, 32, 1 << 20, nullptr);
  REQUIRE(podman.size() == k8s.size() + 1);
  CHECK(podman[0].path == "seed");
  CHECK(podman[0].directory);
  for (std::size_t i = 0; i < k8s.size(); ++i) {
    CHECK(podman[i + 1].path == "seed/" + k8s[i].path);
    CHECK(podman[i + 1].content == k8s[i].content);
  }
  // The total bound: calculator.py (32 bytes) fits in 40, nothing after it does.
  std::vector<std::string> over;
  const auto small = planner_snapshot(seed, "", 1 << 20, 40, &over);
  std::size_t files = 0;
  for (const auto& e : small) files += e.directory ? 0 : 1;
  CHECK(files == 1);
  CHECK(over == std::vector<std::string>{"docs/big.txt", "pkg/run.sh", "test_calculator.py"});
}
