#include "pipeline/reaper.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "engine/podman/warm_spares.h"
#include "engine/podman/cgroup_usage.h"
#include "pipeline/ownership.h"
#include "pipeline/provenance.h"
#include "policy/sandbox_policy.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::map<std::string, std::string> labels_of(const json& c) {
  std::map<std::string, std::string> out;
  const json& l = c.contains("Labels") ? c["Labels"] : json();
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

bool run_owner_alive(const json& rec) {
  const json o = rec.is_object() && rec.contains("owner") && rec["owner"].is_object() ? rec["owner"] : json::object();
  return owner_alive({{kLabelOwner, o.value("user_host", "")},
                      {kLabelPid, std::to_string(o.value("pid", 0L))},
                      {kLabelPidStart, o.value("start_time", "")}});
}

std::string abandoned_run_reason(const std::string& previous_status, long pid, const std::string& user_host) {
  return "interrupted: the run's process (pid " + std::to_string(pid) + " on " + user_host +
         ") is gone, killed (e.g. kill -9) or crashed while the run was " +
         (previous_status.empty() ? std::string("starting") : previous_status) +
         "; there is no verdict. Closed by a later lazyagent-oci (reap, or the start of another run)";
}

void close_abandoned_records(const RunStore& store, ReapReport* report) {
  for (const auto& id : store.active_run_ids()) {
    auto rec = store.read(id);
    if (!rec) {
      // No record (the process died between the marker and the record) or
      // an unreadable one: the marker has nothing left to mark.
      if (rec.error().kind == ErrorKind::kUsage) store.clear_active(id);
      else report->errors.push_back(rec.error().message);
      continue;
    }
    const json& r = *rec;
    const std::string status = r.value("status", "");
    if (is_finished_status(status)) {
      store.clear_active(id);
      continue;
    }
    if (run_owner_alive(r)) continue;  // still at work: never touched
    json closed = r;
    closed.erase("provenance");
    const json o = r.contains("owner") && r["owner"].is_object() ? r["owner"] : json::object();
    closed["status"] = "interrupted";
    closed["error"] = abandoned_run_reason(status, o.value("pid", 0L), o.value("user_host", ""));
    closed["closed_at"] = static_cast<long>(std::time(nullptr));
    closed["updated_at"] = closed["closed_at"];
    closed["provenance"] = build_provenance(closed);
    if (auto st = store.write(closed); st) report->records_closed.push_back(id);
    else report->errors.push_back(st.error().message);
  }
}

Result<ReapReport> reap_leftovers(PodmanClient& podman, const RunStore& store, bool all) {
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
  // Temp files of atomic writes (<name>.tmp.<pid>, run_store.h) whose writer
  // died before its rename: never records, removed once that pid is gone.
  std::vector<std::pair<std::string, fs::path>> temps;
  for (const char* sub : {"runs", "tasks"}) {
    for (const auto& e : fs::directory_iterator(store.dir() + "/" + sub, ec)) {
      const std::string name = e.path().filename().string();
      const auto pos = name.rfind(".tmp.");
      if (pos == std::string::npos) continue;
      char* end = nullptr;
      const long pid = std::strtol(name.c_str() + pos + 5, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // may still be writing
      temps.emplace_back(std::string(sub) + "/" + name, e.path());
    }
  }
  for (const auto& [label, path] : temps) {
    std::error_code rec;
    if (fs::remove(path, rec)) report.temp_files_removed.push_back(label);
  }
  close_abandoned_records(store, &report);
  return report;
}

}  // namespace lazyagent
