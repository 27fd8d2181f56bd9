// Environments: a project's test image, made before any sandbox, with
// network, and cached (config `environment:`, README "Your own project").
//
//   environment:
//     base: localhost/lazyagent-sandbox:latest   # default: images.sandbox
//     setup: ["apt-get update", "apt-get install -y --no-install-recommends python3-pytest"]
//     inputs: [requirements.txt]                  # seed-relative files or directories
//
// The key (32 hex) is the sha256 of the base image's id, the set-up commands,
// the network and every input's path, mode and content hash: a changed input
// or a rebuilt base makes a new image, anything else reuses
// `localhost/lazyagent-env:<key>`. The sandbox on top is the same as on the
// stock image (network none, verified): only its image changes.
//
// How it is built, and why not with podman's build API: podman 4.3.1's
// REST build (POST /libpod/build) runs every RUN step with chroot isolation,
// as the host's root (uid_map 0 0 4294967295), in the host's network
// namespace (it listed cni-podman0 and the veths), with CAP_SYS_CHROOT,
// whatever `isolation=` and `networkmode=` say (measured here). A set-up
// step there could leave its chroot and read the host, podman's secrets
// included. So the set-up runs in an ordinary container instead: created
// from the base through the libpod API, in its own namespaces (mount, pid,
// ipc, uts, network: a bridge, or none), default seccomp, capabilities
// without SYS_CHROOT, SETFCAP, MKNOD, NET_RAW, AUDIT_WRITE, SETPCAP,
// NET_BIND_SERVICE, no podman secret, no environment of the caller (PATH,
// HOME, LANG, DEBIAN_FRONTEND only), the inputs uploaded into
// /lazyagent-env (a copy: the seed is never mounted), the steps run in
// order by /bin/sh -c in /lazyagent-env, then the container is committed as
// the image and removed. It runs without a user namespace, because a commit
// keeps the host ids a user namespace maps to (measured: a file chowned in a
// 1879048192-based namespace is owned by 1879049193 in the image), and the
// sandbox, which does run in one, would then see such files as nobody's.
// A step that fails ends the build: an infra_error naming the step, its exit
// code and the last lines of its output.
//
// `containerfile:` is parsed but refused at build time for the reason above
// (it needs the build API); say so rather than run it unsafely.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "engine/environments.h"
#include "util/result.h"

namespace lazyagent {

class PodmanClient;

inline constexpr const char* kEnvironmentRepo = "localhost/lazyagent-env";
inline constexpr const char* kEnvironmentRoleLabel = "io.lazyagent.role=environment";
inline constexpr const char* kEnvironmentKeyLabel = "io.lazyagent.env.key";
// With environment.egress: what the set-up reached (comma-joined, bounded)
// and the sha256 of that list in full.
inline constexpr const char* kEnvironmentEgressLabel = "io.lazyagent.env.egress-reached";
inline constexpr const char* kEnvironmentEgressSumLabel = "io.lazyagent.env.egress-reached-sha256";

// One input file, read from the seed without following symlinks.
struct EnvironmentInput {
  std::string path;     // seed-relative
  std::string content;
  unsigned mode = 0644;
  std::string sha256;
};

// Reads the config's inputs from `seed_dir`: each a regular file or a
// directory (taken whole, regular files and directories only); a symlink
// anywhere on the way, a special file, a missing path or more than 64 MiB in
// all is a usage error naming environment.inputs[i] and the path.
Result<std::vector<EnvironmentInput>> read_environment_inputs(const EnvironmentConfig& env,
                                                              const std::string& seed_dir);

// The cache key (32 hex) from the base image's name and id, the set-up and
// the inputs. Pure.
std::string environment_key(const EnvironmentConfig& env, const std::string& base, const std::string& base_id,
                            const std::vector<EnvironmentInput>& inputs);

// What the set-up container runs: /bin/sh -c SCRIPT lazyagent-env STEP...,
// each step announced by a marker line on stdout. Pure.
std::vector<std::string> setup_command(const std::vector<std::string>& steps);

// The number of the last step `output` announced (1-based; 0: none), and
// where its output starts. Pure.
std::size_t last_setup_step(const std::string& output, std::size_t* output_from);

// The failure of a set-up whose container exited `exit_code`, from its
// combined output: which step (from the markers), its command and its last
// lines. Pure.
std::string setup_failure_message(const std::vector<std::string>& steps, const std::string& output, int exit_code);

// The libpod create request of the set-up container. Pure.
nlohmann::json setup_container_spec(const EnvironmentConfig& env, const std::string& base, const std::string& name,
                                    const std::map<std::string, std::string>& labels);

// Makes sure the config's environment image exists (building it when it
// does not, or when `rebuild`), sets config->environment.resolved and
// config->images.sandbox to it. Progress lines (steps and their output) go
// to `progress`. No-op without an environment section.
Status resolve_environment(PodmanClient& podman, Config* config, bool rebuild,
                           const std::function<void(const std::string&)>& progress);

// The podman engine's environments (Engine::environments), on one podman
// service (the runc one: builds need a network). podman_environments.cpp.
class PodmanEnvironments : public Environments {
 public:
  explicit PodmanEnvironments(PodmanClient& podman) : podman_(podman) {}
  Status resolve(Config* config, bool rebuild, const ProgressFn& progress) override;
  Result<nlohmann::json> list() override;
  std::string current_key(const Config& config) override;
  Status remove(const std::string& id) override;
  // Through the podman service's push (podman_client.h image_push).
  Status push(const std::string& image, const ImagePushTarget& target) override;

 private:
  PodmanClient& podman_;
};

}  // namespace lazyagent
