#include "engine/podman/podman_reaper.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "engine/podman/podman_engine.h"
#include "engine/podman/live_sandbox.h"
#include "engine/podman/warm_spares.h"
#include "engine/podman/cgroup_usage.h"
#include "store/ownership.h"
#include "policy/sandbox_policy.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A container's "Labels" or a network's "labels".
std::map<std::string, std::string> labels_of(const json& c) {
  std::map<std::string, std::string> out;
  const json& l = c.contains("Labels") ? c["Labels"] : c.contains("labels") ? c["labels"] : json();
  if (l.is_object()) {
    for (const auto& [k, v] : l.items()) {
      if (v.is_string()) out[k] = v.get<std::string>();
    }
  }
  return out;
}

std::string name_of(const json& c) {
  if (c.contains("Names") && c["Names"].is_array() && !c["Names"].empty()) {
    return c["Names"][0].get<std::string>();
  }
  return "";
}

// A private copy belongs to a run whose record names its owner.
bool work_dir_owner_alive(const RunStore& store, const std::string& run_id) {
  auto rec = store.read(run_id);
  if (!rec) return false;
  return run_owner_alive(*rec);
}

bool recently_modified(const fs::path& p, long seconds) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && st.st_mtime > std::time(nullptr) - seconds;
}

}  // namespace

Result<ReapReport> reap_leftovers(PodmanClient& podman, const RunStore& store, bool all, bool networks) {
  ReapReport report;
  auto list = podman.list_by_label(kLabelRole);
  if (!list) return list.error().context("looking for leftover containers");
  std::set<std::string> spare_dirs_kept;  // work/spare-<id> of the spares left
  const std::time_t now = std::time(nullptr);
  for (const auto& c : *list) {
    const std::string id = c.value("Id", "");
    const std::string label = name_of(c) + " (" + id.substr(0, 12) + ")";
    const auto labels = labels_of(c);
    const auto role = labels.find(kLabelRole);
    if (!all && role != labels.end() && role->second == kRoleSpare) {
      // A warm spare outlives its maker: unclaimed, it stays until it
      // expires; claimed (renamed for a run), it is that run's sandbox.
      const SpareInfo s = spare_from_listing(c);
      if (s.store != spare_store_label(store)) continue;  // another run store's: its copy is not in our work/
      const bool keep = s.claimed ? work_dir_owner_alive(store, s.run_id) : s.expires > now;
      if (keep) {
        if (s.claimed) report.left_running.push_back(label);
        else report.spares_left.push_back(label);
        spare_dirs_kept.insert(kSpareDirPrefix + s.spare_id);
        continue;
      }
      if (auto st = podman.remove(id); !st) {
        report.errors.push_back(st.error().message);
        continue;
      }
      report.removed.push_back(label);
      if (!s.spare_id.empty()) remove_cgroup_dirs("/sys/fs/cgroup", run_cgroup_parent(kSpareDirPrefix + s.spare_id));
      const std::string dir = store.work_dir() + "/" + kSpareDirPrefix + s.spare_id;
      if (!s.spare_id.empty() && fs::exists(dir)) {
        if (auto st = remove_tree(dir); st) report.work_dirs_removed.push_back(kSpareDirPrefix + s.spare_id);
        else report.errors.push_back(st.error().message);
      }
      continue;
    } else if (!all && role != labels.end() && role->second == kRoleSession) {
      // A live session's sandbox outlives the process that opened it: kept
      // while its session is open and young enough (live_sandbox.h).
      if (live_session_kept(labels, store.dir(), now)) continue;
    } else if (!all && owner_alive(labels)) {
      report.left_running.push_back(label);
      continue;
    }
    if (auto st = podman.remove(id); st) {
      report.removed.push_back(label);
      // Its run's cgroup (cgroup_usage.h), whichever run store the run used.
      const auto labels = labels_of(c);
      const auto run = labels.find(kLabelRun);
      const bool plain = run != labels.end() && !run->second.empty() &&
                         run->second.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
      if (plain) {
        remove_cgroup_dirs("/sys/fs/cgroup", run_cgroup_parent(run->second));
      }
    } else {
      report.errors.push_back(st.error().message);
    }
  }
  // The egress allow-list networks (egress_proxy.h) of dead owners: after
  // their containers (the proxy, the set-up or planner on them), which the
  // loop above removed by the same rule.
  const bool crashed = !report.removed.empty();
  auto nets = networks || all || crashed ? podman.list_networks_by_label(kLabelRole) : Result<json>(json::array());
  if (!nets) return nets.error().context("looking for leftover networks");
  for (const auto& n : *nets) {
    const std::string name = n.value("name", "");
    if (name.empty() || (!all && owner_alive(labels_of(n)))) continue;
    if (auto st = podman.remove_network(name); st) report.networks_removed.push_back(name);
    else report.errors.push_back(st.error().message);
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(store.work_dir(), ec)) {
    const std::string run_id = e.path().filename().string();
    if (run_id.rfind(kSpareDirPrefix, 0) == 0 && !all) {
      // A spare being made has its directory a moment before its container.
      if (spare_dirs_kept.count(run_id) || recently_modified(e.path(), 60)) continue;
    } else if (!all && work_dir_owner_alive(store, run_id)) {
      continue;
    }
    if (auto st = remove_tree(e.path().string()); st) report.work_dirs_removed.push_back(run_id);
    else report.errors.push_back(st.error().message);
    // Its sandbox's cgroup (cgroup_usage.h), empty now that the container is gone.
    remove_cgroup_dirs("/sys/fs/cgroup", run_cgroup_parent(run_id));
  }
  // Run cgroups whose run has no container left (its owner was killed before
  // the remove step, or conmon outlived a clean-up), whichever run store the
  // run used: a minute old at least, so a run between its container's
  // removal and its own clean-up is left to that.
  std::set<std::string> live;
  for (const auto& c : *list) {
    const auto labels = labels_of(c);
    if (auto run = labels.find(kLabelRun); run != labels.end()) live.insert(run->second);
    const SpareInfo s = spare_from_listing(c);
    if (!s.spare_id.empty()) live.insert(kSpareDirPrefix + s.spare_id);
  }
  for (auto& name : remove_orphan_cgroups("/sys/fs/cgroup", live, 60)) report.cgroups_removed.push_back(name);
  sweep_store(store, &report);
  return report;
}

// The engine's own removals that wait for a moment: after a run's answer
// (defer_removals) and after an outage of the service (stranded_).
Status PodmanEngine::finish_removals() {
  if (deferred_.empty()) return ok_status();
  PodmanClient podman(sandbox_->socket_path());  // its own connection (this may be a forked child)
  Status result = ok_status();
  for (const auto& d : deferred_) {
    if (auto st = podman.remove(d.id); !st) {
      result = st;
      continue;
    }
    if (!d.dir.empty()) (void)remove_tree(d.dir);
    if (!d.cgroup_parent.empty()) remove_cgroup_dirs("/sys/fs/cgroup", d.cgroup_parent);
  }
  deferred_.clear();
  return result;
}

Status PodmanEngine::after_outage() {
  if (auto v = sandbox_->ping(); !v) return v.error();
  if (planner_) {
    if (auto v = planner_->ping(); !v) return v.error();
  }
  Status result = ok_status();
  while (!stranded_.empty()) {
    const StrandedContainer& c = stranded_.back();
    if (auto st = c.podman->remove(c.id); !st) {
      if (st.error().kind == ErrorKind::kUnreachable) return st.error();  // away again: kept for the next call
      result = st.error().context("after the podman service came back");  // `reap` removes it later
    } else if (!c.cgroup_parent.empty()) {
      remove_cgroup_dirs("/sys/fs/cgroup", c.cgroup_parent);
    }
    stranded_.pop_back();
  }
  return result;
}

Status PodmanEngine::remove_run(const std::string& run_id) {
  if (auto st = sandbox_->remove("lazyagent-sandbox-" + run_id); !st) return st;
  return planner_client().remove("lazyagent-planner-" + run_id);
}

}  // namespace lazyagent
