#include "engine/podman/podman_engine.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "contract/planner_snapshot.h"
#include "engine/podman/cgroup_usage.h"
#include "engine/podman/exit_file.h"
#include "engine/podman/log_stream.h"
#include "engine/podman/planner_allowlist.h"
#include "store/ownership.h"
#include "policy/planner_policy.h"
#include "policy/policy_verifier.h"
#include "engine/podman/podman_reaper.h"
#include "engine/podman/runtime_engine.h"
#include "engine/podman/service_facts.h"
#include "policy/runtime_policy.h"
#include "policy/sandbox_policy.h"
#include "util/tar_writer.h"
#include "engine/podman/warm_spares.h"
#include "util/package_mirrors.h"
#include "util/atomic_file.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// Deletes a directory tree (a run's private copy) when it goes out of scope.
class ScopedTree {
 public:
  explicit ScopedTree(std::string path) : path_(std::move(path)) {}
  ~ScopedTree() { remove_now(); }
  ScopedTree(const ScopedTree&) = delete;
  ScopedTree& operator=(const ScopedTree&) = delete;
  void remove_now() {
    if (!path_.empty()) (void)remove_tree(path_);
    path_.clear();
  }
  std::string release() { return std::exchange(path_, std::string()); }

 private:
  std::string path_;
};

// The deadline passed: kills the container and waits for the kill.
Result<ContainerExit> kill_at_deadline(PodmanClient& podman, const std::string& id) {
  ContainerExit exit;
  exit.timed_out = true;
  if (auto st = podman.kill(id); !st) return st.error();
  auto after = podman.wait(id, 10000);
  exit.exit_code = after ? *after : 137;
  return exit;
}

// Waits for the container; at the deadline kills it and waits for the kill.
Result<ContainerExit> wait_or_kill(PodmanClient& podman, const std::string& id, long deadline_ms) {
  ContainerExit exit;
  auto code = podman.wait(id, deadline_ms);
  if (!code && code.error().kind == ErrorKind::kTimeout) return kill_at_deadline(podman, id);
  if (!code) return code.error();
  exit.exit_code = *code;
  return exit;
}

Result<ContainerLogs> demuxed_logs(PodmanClient& podman, const std::string& id, std::size_t max_bytes) {
  auto raw = podman.logs(id, max_bytes);
  if (!raw) return raw.error();
  DemuxedLogs d = demux_logs(raw->body, max_bytes);
  ContainerLogs l;
  l.combined = std::move(d.combined);
  l.out = std::move(d.out);
  l.err = std::move(d.err);
  l.truncated = d.truncated || raw->body_truncated;
  l.cut_where = "at " + std::to_string(max_bytes) + " bytes";
  return l;
}

class PodmanSandbox : public Sandbox {
 public:
  // `unmeasured`: why the sandbox has no cgroup of its own to read (when
  // req.cgroup_parent is empty).
  // `scope_slice`: under the systemd manager, the slice whose scope for it
  // is read instead (cgroup_usage.h).
  PodmanSandbox(PodmanClient& podman, SandboxRequest req, std::string dir, ProgressFn progress,
                std::function<void(const std::string&)> output, std::string unmeasured,
                const std::string& scope_slice = "")
      : podman_(podman), dir_(std::move(dir)), container_(podman), req_(std::move(req)),
        progress_(std::move(progress)), output_(std::move(output)), unmeasured_(std::move(unmeasured)) {
    if (!req_.cgroup_parent.empty()) {
      watch_ = std::make_unique<CgroupWatch>("/sys/fs/cgroup", req_.cgroup_parent);
    } else if (!scope_slice.empty()) {
      watch_ = CgroupWatch::of_systemd_scope("/sys/fs/cgroup", scope_slice);
    }
  }
  ~PodmanSandbox() override {
    if (watch_) watch_->stop();
    if (auto st = container_.remove_now(); !st && st.error().kind == ErrorKind::kUnreachable && stranded_) {
      // The service is away (a restart outlives the container): its engine
      // removes it, and its cgroup, once the service answers (after_outage).
      stranded_->push_back({&podman_, container_.id(), req_.cgroup_parent});
      container_.hold("");
      handed_over_ = true;
    }
    if (watch_ && !handed_over_) watch_->remove_dirs();
  }

  // A claimed warm spare (warm_spares.h): created and initialised already.
  void adopt_spare(const ClaimedSpare& spare) {
    container_.hold(spare.info.id);
    claim_ = SpareClaim{spare.info.nonce, {{"spare", spare.info.spare_id}, {"key", spare.info.key}}};
  }

  std::string id() const override { return container_.id(); }
  const SpareClaim* spare() const override { return claim_ ? &*claim_ : nullptr; }

  Status create() override {
    if (claim_) return ok_status();
    auto reply = podman_.create(build_create_spec(req_));
    if (!reply) {
      // The service went away mid-create: the container may exist without our
      // knowing its id; its name is enough to remove it once it answers.
      if (reply.error().kind == ErrorKind::kUnreachable && stranded_) {
        stranded_->push_back({&podman_, req_.name, req_.cgroup_parent});
      }
      return reply.error();
    }
    container_.hold(reply->id);
    for (const auto& w : reply->warnings) {
      if (progress_) progress_("podman warning: " + w);
    }
    return ok_status();
  }

  Status verify() override {
    const std::string& id = container_.id();
    // A claimed spare was initialised when it was made; its config is
    // verified again here, against this run's request, before it starts.
    if (!claim_) {
      if (auto st = podman_.init(id); !st) return st;
    }
    auto inspect = verify_sandbox_container(podman_, req_, id);
    if (!inspect) return inspect.error();
    // Where conmon will write the exit code (exit_file.h); "" = podman's wait.
    const json& state = (*inspect)["State"];
    const std::string dir = state.is_object() ? conmon_exit_dir(state.value("ConmonPid", 0L)) : "";
    if (!dir.empty()) exit_file_ = dir + "/" + inspect->value("Id", id);
    return ok_status();
  }

  Status start() override {
    if (watch_) watch_->start(container_.id());
    return podman_.start(container_.id());
  }
  Result<ContainerExit> wait(long deadline_ms) override {
    // The output as it arrives, on a connection of its own (a client is one
    // connection, used by one thread); the follow ends when the container does.
    std::thread follower;
    if (output_) {
      follower = std::thread([this, deadline_ms] {
        PodmanClient own(podman_.socket_path());
        FollowedLog log;
        log.max_line = 16 * 1024;
        // A wait again after an outage follows from the start: the lines
        // already passed on are not passed on twice.
        log.line = [this, skip = lines_out_, seen = std::size_t{0}](const std::string& line) mutable {
          if (seen++ < skip) return;
          ++lines_out_;
          output_(line);
        };
        (void)own.stream_get("/containers/" + container_.id() + "/logs?follow=true&stdout=true&stderr=true",
                             [&](std::string_view c) { log.feed(c); }, deadline_ms + 15000, "following the output");
        log.finish();
      });
    }
    auto exit = wait_for_exit(deadline_ms);
    // A wait that failed (a signal) leaves the container running: it is
    // removed next anyway; kill it now so that the follow ends. Not after an
    // outage (the follow ended with the service): it is waited for again.
    if (!exit && exit.error().kind != ErrorKind::kUnreachable && follower.joinable()) (void)podman_.kill(container_.id());
    if (follower.joinable()) follower.join();
    if (watch_) watch_->stop();
    return exit;
  }

  // From conmon's exit file when known (exit_file.h), else podman's wait.
  Result<ContainerExit> wait_for_exit(long deadline_ms) {
    if (exit_file_.empty()) return wait_or_kill(podman_, container_.id(), deadline_ms);
    auto code = wait_for_exit_file(exit_file_, deadline_ms, [this]() -> Status {
      if (auto v = podman_.ping(); !v) return v.error();
      return ok_status();
    });
    if (!code && code.error().kind == ErrorKind::kTimeout) return kill_at_deadline(podman_, container_.id());
    if (!code) return code.error();
    ContainerExit exit;
    exit.exit_code = *code;
    return exit;
  }
  Result<ContainerLogs> logs(std::size_t max_bytes) override {
    return demuxed_logs(podman_, container_.id(), max_bytes);
  }

  nlohmann::json resources() const override {
    if (!watch_) return resources_unavailable(unmeasured_);
    return watch_->figures();
  }

  Status remove() override {
    if (watch_) watch_->stop();
    if (deferred_ != nullptr && !container_.id().empty()) {
      // Handed to PodmanEngine::finish_removals, after the result.
      deferred_->push_back({container_.id(), dir_.release(), req_.cgroup_parent});
      container_.hold("");
      handed_over_ = true;
      return ok_status();
    }
    if (auto st = container_.remove_now(); !st) return st;
    if (watch_) watch_->remove_dirs();
    dir_.remove_now();
    return ok_status();
  }
  bool removal_deferred() const override { return deferred_ != nullptr; }
  void defer_removal_to(std::vector<DeferredRemoval>* list) { deferred_ = list; }
  void strand_to(std::vector<StrandedContainer>* list) { stranded_ = list; }

  std::vector<std::string> probe_violations(const ProbeReport& probe, bool, std::vector<std::string>*) override {
    return lazyagent::probe_violations(probe, req_.policy, req_.runtime);
  }

 private:
  PodmanClient& podman_;
  ScopedTree dir_;               // destroyed last: the container goes before its copy
  ScopedContainer container_;
  SandboxRequest req_;
  ProgressFn progress_;
  std::function<void(const std::string&)> output_;
  std::string unmeasured_;
  std::unique_ptr<CgroupWatch> watch_;  // null when not measured (gVisor, a systemd-managed service)
  std::optional<SpareClaim> claim_;  // none: made for this run
  std::string exit_file_;        // conmon's exit file for it (exit_file.h)
  std::size_t lines_out_ = 0;    // output lines passed on (by the follower, during wait)
  std::vector<DeferredRemoval>* deferred_ = nullptr;  // remove() hands it over (engine.warm)
  std::vector<StrandedContainer>* stranded_ = nullptr;  // where it goes when its removal meets an outage
  bool handed_over_ = false;     // ... and did: its cgroup goes with it there
};

class PodmanPlanner : public Container {
 public:
  PodmanPlanner(PodmanClient& podman, PlannerRequest req, std::string task_tar,
                std::vector<StrandedContainer>* stranded)
      : podman_(podman), container_(podman), req_(std::move(req)), task_tar_(std::move(task_tar)),
        stranded_(stranded) {}
  ~PodmanPlanner() override {
    if (auto st = container_.remove_now(); !st && st.error().kind == ErrorKind::kUnreachable) {
      stranded_->push_back({&podman_, container_.id(), ""});  // as a sandbox's (PodmanSandbox)
      container_.hold("");
    }
  }

  std::string id() const override { return container_.id(); }

  Status create() override {
    json spec = build_planner_spec(req_);
    if (req_.network == "allowlist") {  // planner_allowlist.h
      auto origin = planner_allowlist_origin(podman_, req_.base_url_secret);
      if (!origin) return origin.error();
      auto labels = req_.labels;
      labels["io.lazyagent.role"] = "egress-proxy";
      auto proxy = attach_planner_allowlist(podman_, *origin, "lazyagent-egress-" + req_.name, labels, &spec);
      if (!proxy) return proxy.error();
      proxy_ = std::move(*proxy);
    }
    auto created = podman_.create(spec);
    if (!created) return created.error();
    container_.hold(created->id);
    if (auto st = podman_.put_archive(created->id, kTaskDir, task_tar_); !st) {
      return st.error().context("uploading the task");
    }
    return ok_status();
  }
  Status verify() override { return ok_status(); }
  Status start() override { return podman_.start(container_.id()); }
  Result<ContainerExit> wait(long deadline_ms) override { return wait_or_kill(podman_, container_.id(), deadline_ms); }
  Result<ContainerLogs> logs(std::size_t max_bytes) override {
    return demuxed_logs(podman_, container_.id(), max_bytes);
  }
  Status remove() override {
    Status st = container_.remove_now();
    if (proxy_) {
      if (auto gone = proxy_->remove(); !gone && st) st = gone;
    }
    return st;
  }

 private:
  PodmanClient& podman_;
  std::unique_ptr<EgressProxy> proxy_;  // provider.network: allowlist; removed after the planner
  ScopedContainer container_;
  PlannerRequest req_;
  std::string task_tar_;
  std::vector<StrandedContainer>* stranded_;
};

Status check_secrets(PodmanClient& podman, const Config& config) {
  std::vector<std::string> missing;
  for (const auto& name : {config.provider.base_url_secret, config.provider.model_secret,
                           config.provider.api_key_secret}) {
    auto exists = podman.secret_exists(name);
    if (!exists) return exists.error();
    if (!*exists) missing.push_back(name);
  }
  if (missing.empty()) return ok_status();
  std::string names;
  for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
  return usage_error("the provider is not configured (missing podman secrets: " + names +
                     "): export CODING_AGENT_BASE_URL, CODING_AGENT_MODEL and CODING_AGENT_API_KEY, "
                     "then run `lazyagent-oci configure`");
}

// `key`: the config setting that named the image (a missing image's error says it).
Result<std::string> digest_of(PodmanClient& podman, const std::string& image, const std::string& key) {
  auto img = podman.image_inspect(image, key);
  if (!img) return img.error();
  const std::string digest = img->value("Digest", "");
  return digest.empty() ? img->value("Id", "") : digest;
}

void merge(ReapReport& into, ReapReport&& r) {
  using List = std::vector<std::string> ReapReport::*;
  for (List v : {&ReapReport::removed, &ReapReport::left_running, &ReapReport::work_dirs_removed,
                 &ReapReport::temp_files_removed, &ReapReport::records_closed, &ReapReport::cgroups_removed,
                 &ReapReport::networks_removed, &ReapReport::errors, &ReapReport::spares_left}) {
    (into.*v).insert((into.*v).end(), (r.*v).begin(), (r.*v).end());
  }
}

}  // namespace

PodmanEngine::PodmanEngine(std::unique_ptr<PodmanClient> sandbox, std::unique_ptr<PodmanClient> planner,
                           RunStore store, std::string runtime)
    : sandbox_(std::move(sandbox)), planner_(std::move(planner)), store_(std::move(store)),
      requested_runtime_(std::move(runtime)), host_(rootless_host_of(sandbox_->socket_path())),
      environments_(planner_client()) {}

const Result<ServiceFacts>& PodmanEngine::facts() const {
  if (!facts_) facts_ = service_facts(*sandbox_, store_);
  return *facts_;
}

std::string PodmanEngine::sandbox_runtime() const {
  if (!runtime_.empty()) return runtime_;
  if (requested_runtime_ == kRuntimeRunsc) return kRuntimeRunsc;
  if (const auto& f = facts(); f) {
    if (auto chosen = choose_sandbox_runtime(requested_runtime_, f->oci_runtime, sandbox_->socket_path())) return *chosen;
  }
  return requested_runtime_.empty() ? kRuntimeRunc : requested_runtime_;
}

std::string PodmanEngine::unmeasured_reason() const {
  if (sandbox_runtime() == kRuntimeRunsc) return "gVisor (runsc --ignore-cgroups): the sandbox has no cgroup of its own to read";
  if (host_.rootless) return "rootless podman: a run's cgroup parent is not set, so its figures are not read";
  const auto& f = facts();
  const std::string manager = f ? f->cgroup_manager : "unknown";
  if (manager == "cgroupfs" || !scope_slice().empty()) return "";
  return "the podman service's cgroup manager is '" + manager + "' on a cgroup " +
         (cgroup_layout("/sys/fs/cgroup").empty() ? "layout this host does not show" : cgroup_layout("/sys/fs/cgroup")) +
         " host: neither a run's own cgroup parent nor its systemd scope can be read, so its figures are not";
}

std::string PodmanEngine::scope_slice() const {
  if (sandbox_runtime() == kRuntimeRunsc || host_.rootless) return "";
  const auto& f = facts();
  // Root's podman under systemd puts a container in machine.slice as
  // libpod-<id>.scope (cgroup v2: the unified hierarchy only).
  if (f && f->cgroup_manager == "systemd" && cgroup_layout("/sys/fs/cgroup") == "v2") return "/machine.slice";
  return "";
}

Status PodmanEngine::check_policy(const Config& config) const {
  if (auto st = check_policy_acceptable(config); !st) return st;
  // The mapping this service can give (subordinate ids), then its limits.
  SandboxPolicy scratch = policy_from_config(config, 0);
  if (auto st = adapt_policy_to_host(host_, &scratch); !st) return st;
  return check_host_gaps(config, host_.gaps, host_.gaps_reason);
}

// The egress probe's targets on podman: this machine's own addresses (the
// host's, the podman bridge's gateway), the first a sandbox that found a
// route would reach; nothing outside it (egress_probe.h).
void PodmanEngine::adapt_policy(SandboxPolicy* policy) const {
  (void)adapt_policy_to_host(host_, policy);
  if (policy->egress_probe_targets.empty()) policy->egress_probe_targets = host_probe_targets();
}

json PodmanEngine::policy_json(const SandboxPolicy& policy, const Config& config) const {
  return effective_policy_json(policy, sandbox_runtime(), config.engine.accept_weaker_policy);
}

Status PodmanEngine::check(const ProgressFn& progress) {
  auto runtime = check_engine_runtime(*sandbox_, requested_runtime_, store_);
  if (!runtime) return runtime.error();
  runtime_ = *runtime;
  if (planner_) {
    if (auto v = planner_->ping(); !v) return v.error();
  }
  auto reaped = reap_leftovers_of_both(false, false);
  if (!reaped) return reaped.error();
  // The reaper's listing already showed the spares: a run claims one when
  // there is one, whatever engine.warm says, at no extra podman call when
  // there is none.
  spares_left_ = !reaped->spares_left.empty();
  if (!reaped->removed.empty() && progress) {
    progress("reaped " + std::to_string(reaped->removed.size()) + " container(s) left by crashed runs");
  }
  return ok_status();
}

Result<std::string> PodmanEngine::image_digest(const std::string& image) { return digest_of(*sandbox_, image, "images.sandbox"); }

// What a spare for `spec` is made from (warm_spares.h).
SpareRecipe PodmanEngine::recipe_of(const SandboxSpec& spec) const {
  SpareRecipe r;
  r.policy = spec.policy;
  r.runtime = sandbox_runtime();
  r.own_cgroup = unmeasured_reason().empty() && scope_slice().empty();
  r.command_for = spec.command_for;
  r.image_digest = spec.image_digest;
  r.scope = canonical_scope(spec.config->seed);
  r.ttl_seconds = spec.config->engine.warm_ttl_seconds;
  return r;
}

Result<std::unique_ptr<Sandbox>> PodmanEngine::prepare_sandbox(const SandboxSpec& spec) {
  if ((spec.config->engine.warm > 0 || spares_left_) && spec.command_for && !spec.image_digest.empty() &&
      spec.session_copy.empty()) {
    auto warm = claim_warm(spec);
    if (!warm) return warm.error();
    if (*warm) return std::move(*warm);
    spares_left_ = false;  // none usable: the next sandbox of this process is made cold without asking
  }
  // A session's command keeps its files next to the session's copy, out of
  // the reaper's work/ (session_store.h); a run's are under work/.
  const std::string dir = spec.session_copy.empty()
                              ? store_.work_dir() + "/" + spec.run_id
                              : spec.session_copy.substr(0, spec.session_copy.rfind('/')) + "/run-" + spec.run_id;
  if (auto st = remove_tree(dir); !st) return st.error();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (is_disk_full_errno(errno)) return disk_full_error(store_.work_dir(), "creating " + dir, 4096);
    return engine_error("creating " + dir + ": " + std::strerror(errno));
  }
  SandboxRequest req;
  req.policy = spec.policy;
  req.name = "lazyagent-sandbox-" + spec.run_id;
  req.labels = owner_labels(current_owner(), "sandbox", spec.run_id);
  req.seed_copy_path = dir + "/seed";
  // podman reads the seccomp profile from a path on its host at create.
  req.seccomp_profile_path = dir + "/seccomp.json";
  req.test_command = spec.config->test_command;
  req.runtime = sandbox_runtime();
  // The run's own cgroup parent (cgroup_usage.h): a path, which only the
  // cgroupfs manager takes (systemd's wants a slice name); gVisor has none.
  const std::string unmeasured = unmeasured_reason(), slice = scope_slice();
  if (unmeasured.empty() && slice.empty()) req.cgroup_parent = run_cgroup_parent(spec.run_id);
  if (!spec.session_copy.empty()) {
    req.seed_copy_path.clear();
    req.work_copy_path = spec.session_copy;
  }
  auto sandbox = std::make_unique<PodmanSandbox>(*sandbox_, req, dir, spec.progress, spec.output, unmeasured, slice);
  if (defer_removals_) sandbox->defer_removal_to(&deferred_);
  sandbox->strand_to(&stranded_);
  // A session's copy is already there, owned by the sandbox's root (session.h).
  if (spec.session_copy.empty()) {
    // A full disk is said before the copy is half made (disk_space.h).
    std::uint64_t bytes = spec.seed->bytes;
    for (const auto& w : *spec.writes) bytes += w.content.size();
    if (auto st = check_free_space(store_.work_dir(), "the run's private copy of the seed", bytes); !st) return st.error();
    if (auto st = write_seed_copy(*spec.seed, *spec.writes, req.seed_copy_path); !st) return st.error();
  }
  // The sandbox's root is host id userns.host_id: it owns its copy (read-only
  // at /seed), as host root owned it before (rootless: may read it); the run
  // directory stays 0700. A session's copy was handed over when it was opened.
  if (spec.session_copy.empty()) {
    if (auto st = hand_copy_to_sandbox(req.seed_copy_path, req.policy.userns); !st) return st.error();
  }
  if (auto st = write_file_atomic(req.seccomp_profile_path, req.policy.seccomp.dump()); !st) return st.error();
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

// A claimed spare, filled with this run's copy; nullptr when none matched.
Result<std::unique_ptr<Sandbox>> PodmanEngine::claim_warm(const SandboxSpec& spec) {
  const SpareRecipe recipe = recipe_of(spec);
  std::vector<std::string> discarded;
  auto claimed = claim_spare(*sandbox_, store_, recipe, spec.run_id, &discarded);
  if (!claimed) return claimed.error();
  for (const auto& d : discarded) {
    if (spec.progress) spec.progress("warm: removed spare " + d + " (made for another policy, image or config)");
  }
  if (!*claimed) return std::unique_ptr<Sandbox>();
  const ClaimedSpare& spare = **claimed;
  SandboxRequest req = spare_request(recipe, spare.dir, spare.info.nonce, spare.info.labels);
  req.name = spare.info.name;
  // A spare has its own cgroup parent under runc as root (warm_spares.cpp).
  auto sandbox = std::make_unique<PodmanSandbox>(*sandbox_, req, spare.dir, spec.progress, spec.output,
                                                 unmeasured_reason(), scope_slice());
  sandbox->adopt_spare(spare);  // from here its destructor removes the container and the directory
  if (defer_removals_) sandbox->defer_removal_to(&deferred_);
  sandbox->strand_to(&stranded_);
  if (auto st = fill_spare(spare.dir, *spec.seed, *spec.writes, spec.policy); !st) return st.error();
  if (spec.progress) spec.progress("warm: claimed spare " + spare.info.spare_id);
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

Result<std::vector<std::string>> PodmanEngine::keep_warm(const SandboxSpec& spec, int count) {
  return keep_spares(*sandbox_, store_, recipe_of(spec), count);
}

Status PodmanEngine::check_planner(const Config& config) {
  if (config.provider.network == "bridge") {  // a rootless bridge is slirp4netns (rootless_host.h)
    const RootlessHost h = planner_ ? rootless_host_of(planner_->socket_path()) : host_;
    if (auto st = check_rootless_network(h, "the planner's network (provider.network: bridge)"); !st) return st;
  }
  return check_secrets(planner_client(), config);
}

Result<std::string> PodmanEngine::planner_image_digest(const Config& config) {
  auto d = digest_of(planner_client(), config.images.planner, "images.planner");
  if (!d) return d.error().context("the planner image");
  return d;
}

Result<std::unique_ptr<Container>> PodmanEngine::prepare_planner(const PlannerSpec& spec) {
  PlannerRequest req = planner_request_from_config(*spec.config);
  req.name = "lazyagent-planner-" + spec.run_id;
  req.labels = owner_labels(current_owner(), "planner", spec.run_id);
  std::vector<TarEntry> entries = {{"task.json", task_to_json(*spec.task).dump(), 0644, false}};
  if (spec.task->loop.tools && spec.seed != nullptr) {  // the tools' read-only snapshot (planner_tools.h)
    auto files = planner_snapshot(*spec.seed, kSnapshotUploadDir, kMaxSnapshotFileBytes, kMaxSnapshotBytes, nullptr);
    entries.insert(entries.end(), std::make_move_iterator(files.begin()), std::make_move_iterator(files.end()));
  }
  auto tar = write_tar(entries);
  if (!tar) return tar.error();
  return std::unique_ptr<Container>(
      std::make_unique<PodmanPlanner>(planner_client(), std::move(req), std::move(*tar), &stranded_));
}

Result<std::vector<std::string>> PodmanEngine::remove_spares() { return remove_unclaimed_spares(*sandbox_, store_); }

Result<nlohmann::json> PodmanEngine::spares_json(std::time_t now) {
  auto list = list_spares(*sandbox_, &store_);
  if (!list) return list.error();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : *list) out.push_back(spare_json(s, now));
  return out;
}

Result<bool> PodmanEngine::sandbox_exists(const std::string& id) { return sandbox_->exists(id); }

// The containers labelled with this pid on the sandbox service and, when it
// is another, the planner's (sandbox_policy.h labels).
Result<std::vector<std::string>> PodmanEngine::left_by_process(int pid) {
  std::vector<std::string> left;
  for (PodmanClient* podman : {sandbox_.get(), planner_.get()}) {
    if (podman == nullptr || (podman == planner_.get() && planner_->socket_path() == sandbox_->socket_path())) continue;
    auto list = podman->list_by_label(std::string(kLabelPid) + "=" + std::to_string(pid));
    if (!list) return list.error();
    for (const auto& c : *list) {
      const auto& names = c.contains("Names") ? c["Names"] : nlohmann::json();
      left.push_back(names.is_array() && !names.empty() && names[0].is_string() ? names[0].get<std::string>()
                                                                                   : c.value("Id", "").substr(0, 12));
    }
  }
  return left;
}

Result<ReapReport> PodmanEngine::reap(bool all) { return reap_leftovers_of_both(all, true); }

Result<ReapReport> PodmanEngine::reap_leftovers_of_both(bool all, bool networks) {
  auto report = reap_leftovers(*sandbox_, store_, all, networks);
  if (!report || !planner_ || planner_->socket_path() == sandbox_->socket_path()) return report;
  auto more = reap_leftovers(*planner_, store_, all, networks);
  if (!more) return more.error();
  merge(*report, std::move(*more));
  return report;
}

}  // namespace lazyagent
