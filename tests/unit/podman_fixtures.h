// The documents podman 4.3.1 really produced for our create request
// (tests/fixtures/podman-4.3.1, captured from a real container): the request
// that made them, and loaders that bring the captured OCI spec's process.args
// up to today's sandbox command (the command itself is tested in
// sandbox_policy_test). Shared by the verifier's tests. One line was added
// by hand after the capture: TMPDIR=/work/.lazyagent-tmp in both documents'
// env, when the policy's allowlist gained it (podman passes the request's
// env through as given, as the other names there show).
#pragma once

#include "test_paths.h"
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy_verifier.h"
#include "policy/sandbox_policy.h"

namespace fixtures {

// The captured container's id. (Tests say `using namespace fixtures;`.)
inline const std::string kId = "309ab6b1ce940e4de28a92581e50a1ea60598b67eb0775615ba4d68e904984b4";

inline nlohmann::json podman_fixture(const std::string& name) {
  std::ifstream f(std::string(LAZYAGENT_SOURCE_DIR) + "/tests/fixtures/podman-4.3.1/" + name);
  return nlohmann::json::parse(f);
}

// The request the fixtures were captured with.
inline lazyagent::SandboxRequest captured_request() {
  lazyagent::SandboxRequest r;
  r.policy.image = "localhost/lazyagent-sandbox:latest";
  r.name = "lazyagent-capture";
  r.labels = {{"io.lazyagent.role", "capture"}};
  r.seed_copy_path = "/tmp/cap/seedcopy";
  r.seccomp_profile_path = "/tmp/cap/seccomp.json";
  r.test_command = "python3 -m unittest -v";
  return r;
}

// inspect.json and oci-config.json, with today's sandbox command.
struct Docs {
  nlohmann::json inspect = podman_fixture("inspect.json");
  nlohmann::json spec = podman_fixture("oci-config.json");
  Docs() {
    spec["process"]["args"] = lazyagent::sandbox_command("python3 -m unittest -v", captured_request().policy.log_bytes);
  }
};

// The verifier's violation codes for the documents.
inline std::vector<std::string> codes(const Docs& d,
                                                const lazyagent::SandboxRequest& r = captured_request()) {
  std::vector<std::string> out;
  for (const auto& v : lazyagent::verify_effective_config(r, kId, d.inspect, d.spec)) out.push_back(v.code);
  return out;
}

}  // namespace fixtures
