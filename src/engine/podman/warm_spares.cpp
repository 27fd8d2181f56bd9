#include "engine/podman/warm_spares.h"

#include "engine/podman/rootless_host.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "contract/runner_driver.h"
#include "contract/seed_snapshot.h"
#include "engine/podman/cgroup_usage.h"
#include "store/ownership.h"
#include "policy/policy_verifier.h"
#include "policy/runtime_policy.h"
#include "util/digest.h"
#include "util/file_lock.h"
#include "util/http_transfer.h"

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kKeyNonce = "0000000000000000";
// A spare this close to its expiry is not claimed: the reaper of another
// process may be removing it.
constexpr long kClaimMarginSeconds = 5;

// Claims and removals of spares of one run store, one process at a time (two
// renames of one container by name could otherwise both succeed).
class SpareLock {
 public:
  explicit SpareLock(const RunStore& store) {
    // A run store nothing has written to yet (`reap` after a killed `env
    // build`, which keeps no records) has no directory for the lock.
    if (auto st = store.ensure(); !st) {
      error_ = st.error().message;
      return;
    }
    lock_.emplace(store.dir() + "/spares.lock");
    error_ = lock_->error();
  }
  const std::string& error() const { return error_; }

 private:
  std::optional<FileLock> lock_;
  std::string error_;
};

std::string first_name(const json& c) {
  if (c.contains("Names") && c["Names"].is_array() && !c["Names"].empty() && c["Names"][0].is_string()) {
    std::string n = c["Names"][0].get<std::string>();
    if (!n.empty() && n[0] == '/') n.erase(0, 1);
    return n;
  }
  return "";
}

}  // namespace

SpareInfo spare_from_listing(const json& c) {
  SpareInfo s;
  s.id = c.value("Id", "");
  s.name = first_name(c);
  s.state = c.value("State", "");
  if (c.contains("Labels") && c["Labels"].is_object()) {
    for (const auto& [k, v] : c["Labels"].items()) {
      if (v.is_string()) s.labels[k] = v.get<std::string>();
    }
  }
  auto label = [&](const char* k) {
    auto it = s.labels.find(k);
    return it == s.labels.end() ? std::string() : it->second;
  };
  s.key = label(kLabelSpareKey);
  s.scope = label(kLabelSpareScope);
  s.store = label(kLabelSpareStore);
  s.nonce = label(kLabelSpareNonce);
  s.expires = std::atol(label(kLabelSpareExpires).c_str());
  const std::string run = label(kLabelRun);  // "spare-<id>"
  if (run.rfind(kSpareDirPrefix, 0) == 0) s.spare_id = run.substr(std::strlen(kSpareDirPrefix));
  const std::string sandbox_prefix = "lazyagent-sandbox-";
  s.claimed = s.name.rfind(kSpareNamePrefix, 0) != 0;
  if (s.claimed && s.name.rfind(sandbox_prefix, 0) == 0) s.run_id = s.name.substr(sandbox_prefix.size());
  return s;
}

namespace {

std::string spare_dir(const RunStore& store, const std::string& spare_id) {
  return store.work_dir() + "/" + kSpareDirPrefix + spare_id;
}

bool usable(const SpareInfo& s, const std::string& key, std::time_t now) {
  return !s.claimed && s.key == key && s.state == "initialized" && s.expires > now + kClaimMarginSeconds;
}

// Removes a spare's container, then its directory.
Status remove_spare(PodmanClient& podman, const RunStore& store, const SpareInfo& s) {
  if (auto st = podman.remove(s.id); !st) return st;
  if (s.spare_id.empty()) return ok_status();
  remove_cgroup_dirs("/sys/fs/cgroup", run_cgroup_parent(kSpareDirPrefix + s.spare_id));
  return remove_tree(spare_dir(store, s.spare_id));
}

// The copy's directory of a spare: mode 0700, the seed mount point empty and
// owned by the sandbox's root, the seccomp profile podman reads at create.
Status make_spare_dir(const std::string& dir, const SandboxRequest& req) {
  if (::mkdir(dir.c_str(), 0700) != 0) return engine_error("creating " + dir + ": " + std::strerror(errno));
  if (::mkdir(req.seed_copy_path.c_str(), 0755) != 0) {
    return engine_error("creating " + req.seed_copy_path + ": " + std::strerror(errno));
  }
  if (auto st = hand_copy_to_sandbox(req.seed_copy_path, req.policy.userns); !st) return st;
  return write_file_atomic(req.seccomp_profile_path, req.policy.seccomp.dump());
}

}  // namespace

SandboxRequest spare_request(const SpareRecipe& recipe, const std::string& dir, const std::string& nonce,
                             std::map<std::string, std::string> labels) {
  SandboxRequest req;
  req.policy = recipe.policy;
  req.labels = std::move(labels);
  req.seed_copy_path = dir + "/seed";
  req.seccomp_profile_path = dir + "/seccomp.json";
  req.test_command = recipe.command_for ? recipe.command_for(nonce) : "";
  req.runtime = recipe.runtime;
  // Its own cgroup parent, as a run's (cgroup_usage.h): the resources a run in
  // it used are read there. Named by the spare's directory, work/spare-<id>.
  // A rootless service cannot make it (mkdir under /sys/fs/cgroup: EACCES),
  // the systemd manager takes only a slice, gVisor has no cgroup.
  if (recipe.own_cgroup) req.cgroup_parent = run_cgroup_parent(dir.substr(dir.rfind('/') + 1));
  return req;
}

std::string canonical_scope(const std::string& seed_dir) {
  if (seed_dir.empty()) return seed_dir;
  std::error_code ec;
  const fs::path real = fs::canonical(seed_dir, ec);
  if (!ec) return real.string();
  fs::path p = fs::absolute(seed_dir, ec).lexically_normal();
  std::string out = p.string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string spare_key(const SpareRecipe& recipe) {
  const SandboxRequest req = spare_request(recipe, "/SPARE", kKeyNonce, {});
  const json key = {{"create", build_create_spec(req)},
                    {"seccomp", recipe.policy.seccomp},
                    {"image_digest", recipe.image_digest},
                    {"runtime", recipe.runtime},
                    {"scope", canonical_scope(recipe.scope)}};
  return sha256_hex(key.dump()).substr(0, 32);
}

std::string spare_scope_label(const RunStore& store, const SpareRecipe& recipe) {
  return sha256_hex(store.work_dir() + "\n" + canonical_scope(recipe.scope)).substr(0, 32);
}

Result<json> verify_sandbox_container(PodmanClient& podman, const SandboxRequest& req, const std::string& id) {
  auto inspect = podman.inspect(id);
  if (!inspect) return inspect.error();
  const std::string spec_path = inspect->value("StaticDir", "") + "/config.json";
  std::string text;
  bool read = false;
  if (req.policy.userns.rootless) {
    // Rootless, podman gives userdata to the sandbox's root (a subordinate
    // id): read it from inside the service's user namespace (rootless_host.h).
    const json& state = (*inspect)["State"];
    const long conmon = state.is_object() ? state.value("ConmonPid", 0L) : 0L;
    auto got = read_in_service_userns(conmon, spec_path, 4 << 20);
    if (!got) return got.error().context("verifying the sandbox");
    text = std::move(*got);
    read = true;
  } else {
    std::ifstream f(spec_path);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
    read = static_cast<bool>(f);
  }
  json spec = json::parse(text, nullptr, false);
  if (!read || spec.is_discarded()) {
    return engine_error("verifying the sandbox: cannot read the OCI spec podman generated at " + spec_path +
                        " (lazyagent-oci must run on the podman host)");
  }
  auto violations = verify_effective_config(req, id, *inspect, spec);
  if (!violations.empty()) {
    return engine_error("the sandbox podman created does not match the policy, refusing to start it: " +
                        describe_violations(violations));
  }
  return std::move(*inspect);
}

std::string spare_store_label(const RunStore& store) { return sha256_hex(store.work_dir()).substr(0, 16); }

Result<std::vector<SpareInfo>> list_spares(PodmanClient& podman, const RunStore* store) {
  auto list = podman.list_by_label(std::string(kLabelRole) + "=" + kRoleSpare);
  if (!list) return list.error().context("listing warm spares");
  const std::string mine = store ? spare_store_label(*store) : "";
  std::vector<SpareInfo> out;
  for (const auto& c : *list) {
    SpareInfo s = spare_from_listing(c);
    if (!store || s.store == mine) out.push_back(std::move(s));
  }
  return out;
}

Result<std::string> make_spare(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe) {
  const std::string spare_id = random_nonce().substr(0, 12);
  const std::string dir = spare_dir(store, spare_id);
  auto labels = owner_labels(current_owner(), kRoleSpare, kSpareDirPrefix + spare_id);
  const std::string nonce = random_nonce();
  labels[kLabelSpareKey] = spare_key(recipe);
  labels[kLabelSpareScope] = spare_scope_label(store, recipe);
  labels[kLabelSpareStore] = spare_store_label(store);
  labels[kLabelSpareNonce] = nonce;
  labels[kLabelSpareExpires] = std::to_string(static_cast<long>(std::time(nullptr)) + recipe.ttl_seconds);
  SandboxRequest req = spare_request(recipe, dir, nonce, labels);
  req.name = kSpareNamePrefix + spare_id;
  // Everything made so far goes on any failure below.
  struct Undo {
    PodmanClient& podman;
    std::string dir, id;
    bool keep = false;
    ~Undo() {
      if (keep) return;
      if (!id.empty()) (void)podman.remove(id);
      remove_cgroup_dirs("/sys/fs/cgroup", run_cgroup_parent(dir.substr(dir.rfind('/') + 1)));
      (void)remove_tree(dir);
    }
  } undo{podman, dir, ""};
  if (auto st = make_spare_dir(dir, req); !st) return st.error().context("making a warm spare");
  auto reply = podman.create(build_create_spec(req));
  if (!reply) return reply.error().context("making a warm spare");
  undo.id = reply->id;
  if (auto st = podman.init(reply->id); !st) return st.error().context("making a warm spare");
  if (auto v = verify_sandbox_container(podman, req, reply->id); !v) return v.error().context("making a warm spare");
  undo.keep = true;
  return req.name;
}

namespace {

// The caller holds the SpareLock. The unclaimed spares of `recipe`'s scope
// that are usable for its key; those of the scope made for another key (the
// policy, image, config or runtime changed since) are removed, their names
// added to `discarded`.
Result<std::vector<SpareInfo>> usable_spares(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe,
                                             std::vector<std::string>* discarded) {
  auto spares = list_spares(podman, &store);
  if (!spares) return spares.error();
  const std::string key = spare_key(recipe);
  const std::string scope = spare_scope_label(store, recipe);
  const std::time_t now = std::time(nullptr);
  std::vector<SpareInfo> out;
  for (const auto& s : *spares) {
    if (s.claimed || s.scope != scope) continue;
    if (s.key != key) {
      if (remove_spare(podman, store, s) && discarded) discarded->push_back(s.name);
    } else if (usable(s, key, now)) {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace

Result<std::optional<ClaimedSpare>> claim_spare(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe,
                                                const std::string& run_id, std::vector<std::string>* discarded) {
  SpareLock lock(store);
  if (!lock.error().empty()) return engine_error(lock.error());
  auto spares = usable_spares(podman, store, recipe, discarded);
  if (!spares) return spares.error();
  for (const auto& s : *spares) {
    auto r = podman.call("POST", "/containers/" + url_escape(s.name) + "/rename?name=" +
                                     url_escape("lazyagent-sandbox-" + run_id));
    if (!r || r->status != 204) continue;  // gone meanwhile (a `reap --all`): try the next
    ClaimedSpare claimed{s, spare_dir(store, s.spare_id)};
    claimed.info.claimed = true;
    claimed.info.run_id = run_id;
    claimed.info.name = "lazyagent-sandbox-" + run_id;
    return std::optional<ClaimedSpare>(std::move(claimed));
  }
  return std::optional<ClaimedSpare>();
}

Status fill_spare(const std::string& dir, const SeedSnapshot& seed, const std::vector<FileWrite>& writes,
                  const SandboxPolicy& policy) {
  const std::string fill = dir + "/fill", mounted = dir + "/seed";
  if (auto st = remove_tree(fill); !st) return st;
  if (auto st = write_seed_copy(seed, writes, fill); !st) return st;
  if (auto st = hand_copy_to_sandbox(fill, policy.userns); !st) return st;
  struct stat st {};
  if (::stat(fill.c_str(), &st) == 0) ::chmod(mounted.c_str(), st.st_mode & 07777);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fill, ec)) {
    const std::string to = mounted + "/" + e.path().filename().string();
    if (::rename(e.path().c_str(), to.c_str()) != 0) {
      return engine_error("filling the warm spare's copy (" + to + "): " + std::strerror(errno));
    }
  }
  if (ec) return engine_error("reading " + fill + ": " + ec.message());
  return remove_tree(fill);
}

Result<std::vector<std::string>> keep_spares(PodmanClient& podman, const RunStore& store, const SpareRecipe& recipe,
                                             int count) {
  std::size_t have = 0;
  {
    SpareLock lock(store);
    if (!lock.error().empty()) return engine_error(lock.error());
    auto spares = usable_spares(podman, store, recipe, nullptr);
    if (!spares) return spares.error();
    have = spares->size();
  }
  std::vector<std::string> made;
  for (; have < static_cast<std::size_t>(std::max(count, 0)); ++have) {
    auto name = make_spare(podman, store, recipe);
    if (!name) return name.error();
    made.push_back(*name);
  }
  return made;
}

Result<std::vector<std::string>> remove_unclaimed_spares(PodmanClient& podman, const RunStore& store) {
  SpareLock lock(store);
  if (!lock.error().empty()) return engine_error(lock.error());
  auto spares = list_spares(podman, &store);
  if (!spares) return spares.error();
  std::vector<std::string> removed;
  for (const auto& s : *spares) {
    if (s.claimed) continue;
    if (auto st = remove_spare(podman, store, s); !st) return st.error();
    removed.push_back(s.name + " (" + s.id.substr(0, 12) + ")");
  }
  return removed;
}

json spare_json(const SpareInfo& s, std::time_t now) {
  json j = {{"name", s.name},        {"id", s.id.substr(0, 12)}, {"state", s.state},
            {"key", s.key},          {"claimed", s.claimed},     {"expires_at", s.expires},
            {"expires_in", static_cast<long>(s.expires - now)}};
  if (s.claimed) j["run_id"] = s.run_id;
  return j;
}

}  // namespace lazyagent
