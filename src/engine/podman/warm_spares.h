// Warm spares: sandboxes made before their patch exists.
//
// Everything in a sandbox's container config is known from the policy, the
// image and the test command; only the content of its private copy is not.
// A spare is that container, created with the policy, `init`ed and verified
// (policy_verifier.h), whose copy directory (work/spare-<id>/seed under the
// run store, bind-mounted read-only at /seed) is empty until a run claims it:
//
//   make    work/spare-<id>/{seed/,seccomp.json}; POST create as
//           "lazyagent-spare-<id>" with the owner labels (role "spare") and
//           the spare labels below; init; verify. Any failure removes it.
//   claim   the spares whose key matches, unexpired, in state "initialized":
//           podman's rename to "lazyagent-sandbox-<run>" is the atomic claim
//           (a second claimer gets 404 and tries the next spare or makes its
//           own); spares of the same scope (seed) with another key are
//           removed, so none outlives a change of policy or image.
//   fill    the copy is written beside the mounted directory and its entries
//           renamed into it (a bind mount shows later files; a rename over the
//           directory itself would not be seen); then inspect and the OCI spec
//           are verified again before start.
//
// The key is the SHA-256 of the create request with its per-spare parts
// (name, labels, paths, the runner's report nonce) replaced by fixed
// strings, the seccomp profile, the image digest and the runtime: any change
// of policy, image, config or runtime changes it. The nonce of a claimed
// spare becomes the run's (runner_driver.h: fresh per spare, never reused).
//
// Leftovers (podman_reaper.h): an unclaimed spare past its expiry, a claimed one
// whose run's owner is gone, and a spare directory with no container are
// removed by the next start; `reap` removes every unclaimed spare.
#pragma once

#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/podman/podman_client.h"
#include "store/run_store.h"
#include "contract/seed_snapshot.h"
#include "policy/sandbox_policy.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kRoleSpare = "spare";
inline constexpr const char* kLabelSpareKey = "io.lazyagent.spare-key";
inline constexpr const char* kLabelSpareScope = "io.lazyagent.spare-scope";
inline constexpr const char* kLabelSpareStore = "io.lazyagent.spare-store";  // which run store's work/ holds its copy
inline constexpr const char* kLabelSpareNonce = "io.lazyagent.spare-nonce";
inline constexpr const char* kLabelSpareExpires = "io.lazyagent.spare-expires";  // unix seconds
inline constexpr const char* kSpareNamePrefix = "lazyagent-spare-";
inline constexpr const char* kSpareDirPrefix = "spare-";

// What a sandbox of some run would be, minus the run.
struct SpareRecipe {
  SandboxPolicy policy;
  std::string runtime = "runc";
  // Its own cgroup parent, whose figures a run reads (root, cgroupfs manager,
  // not gVisor: PodmanEngine::unmeasured_reason).
  bool own_cgroup = true;
  // The command the sandbox runs for a report nonce (runner_driver.h).
  std::function<std::string(const std::string& nonce)> command_for;
  std::string image_digest;
  std::string scope;  // the seed directory: spares of one project (canonical_scope)
  long ttl_seconds = 600;
};

std::string spare_key(const SpareRecipe& recipe);

// The seed directory as a scope: its real path (symlinks, `..`, `.` and a
// trailing `/` resolved), so `seed`, `../x/seed` and `/abs/seed/` name one
// scope; the lexically normal absolute path when it cannot be resolved.
std::string canonical_scope(const std::string& seed_dir);

// The spare-scope label of `recipe`'s spares in `store` (canonical_scope).
std::string spare_scope_label(const RunStore& store, const SpareRecipe& recipe);

// The request a spare's container was (or is) made from: `dir` is its
// work/spare-<id> directory, `labels` what it carries.
SandboxRequest spare_request(const SpareRecipe& recipe, const std::string& dir, const std::string& nonce,
                             std::map<std::string, std::string> labels);

struct SpareInfo {
  std::string id, name, key, scope, store, nonce, state;
  std::string spare_id;  // "<id>" of lazyagent-spare-<id>, and of work/spare-<id>
  long expires = 0;
  bool claimed = false;  // renamed to lazyagent-sandbox-<run>
  std::string run_id;    // the claiming run, when claimed
  std::map<std::string, std::string> labels;
};

// Inspect + the OCI spec podman generated for container `id`, checked
// against `req` by the policy verifier (policy_verifier.h); any difference
// is an error naming it. The container must be created (and `init`ed).
// Returns the inspect it checked, so that the caller asks podman once.
Result<nlohmann::json> verify_sandbox_container(PodmanClient& podman, const SandboxRequest& req,
                                                const std::string& id);

// A spare as podman's container listing shows it.
SpareInfo spare_from_listing(const nlohmann::json& container);

// Removes every unclaimed spare of `store` (`reap`); returns "name (id)" of each.
Result<std::vector<std::string>> remove_unclaimed_spares(PodmanClient& podman, const RunStore& store);

// The spare-store label of `store`'s spares.
std::string spare_store_label(const RunStore& store);

// Every spare podman holds (claimed or not), from one listing; with `store`,
// only that run store's.
Result<std::vector<SpareInfo>> list_spares(PodmanClient& podman, const RunStore* store = nullptr);

// Makes one spare; returns its container name.
Result<std::string> make_spare(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe);

struct ClaimedSpare {
  SpareInfo info;
  std::string dir;  // work/spare-<id>
};

// Claims a matching spare for `run_id`, or nothing when none is there (or all
// were taken first). `discarded` gets the names of spares of the same scope
// with another key, removed here.
Result<std::optional<ClaimedSpare>> claim_spare(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe,
                                                const std::string& run_id, std::vector<std::string>* discarded);

// Fills a claimed spare's empty copy directory with seed + writes.
Status fill_spare(const std::string& dir, const SeedSnapshot& seed, const std::vector<FileWrite>& writes,
                  const SandboxPolicy& policy);

// Brings the unclaimed, unexpired spares of `recipe`'s key up to `count`
// (removing those of the same scope with another key). Returns the names made.
Result<std::vector<std::string>> keep_spares(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe,
                                             int count);

// The JSON `sandboxes` shows for a spare.
nlohmann::json spare_json(const SpareInfo& s, std::time_t now);

}  // namespace lazyagent
