#include "store/store_sweep.h"

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <utility>

#include "policy/sandbox_policy.h"
#include "store/ownership.h"
#include "store/provenance.h"

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

void sweep_store(const RunStore& store, ReapReport* report) {
  sweep_temp_files(store, report);
  close_abandoned_records(store, report);
}

void sweep_temp_files(const RunStore& store, ReapReport* report) {
  std::error_code ec;
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
    if (fs::remove(path, rec)) report->temp_files_removed.push_back(label);
  }
}

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

}  // namespace lazyagent
