// Durable records of runs, one JSON file per run.
//
// Layout under the state directory ($XDG_STATE_HOME/lazyagent-oci, default
// ~/.local/state/lazyagent-oci):
//   runs/<run-id>.json   the record: written when the run starts (status
//                        "running", owner pid) and rewritten at each step and
//                        at the end. Each write is atomic: a temp file in the
//                        same directory, fsync, rename, fsync of the directory,
//                        so a crash leaves the old record or the new one, never
//                        a torn one.
//   active/<run-id>      exists while the record is unfinished (status
//                        "running", "planning", or none yet): created (and its
//                        directory synced) before the first unfinished record
//                        is written, removed after the finished one. A run
//                        killed with SIGKILL leaves it behind, so the reaper
//                        finds the records to close as "interrupted" without
//                        reading every record (store_sweep.h).
//   tasks/<task-id>.json the planner task record (`task show`), atomic
//   tasks/<task-id>.log  the planner's log (`task logs`), never the API key
//   work/<run-id>/       the private seed copy of a running sandbox run; mode
//                        0700, deleted when the run ends, reaped after a crash.
// Run ids sort by time, so "recent" is a reverse sort of names.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/atomic_file.h"
#include "util/result.h"

namespace lazyagent {

// $XDG_STATE_HOME/lazyagent-oci, or $HOME/.local/state/lazyagent-oci. Pure.
std::string default_state_dir(const char* xdg_state_home, const char* home);

class RunStore {
 public:
  explicit RunStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string runs_dir() const { return dir_ + "/runs"; }
  std::string work_dir() const { return dir_ + "/work"; }
  std::string active_dir() const { return dir_ + "/active"; }

  // Creates the directories (0700). Idempotent.
  Status ensure() const;
  // Atomically writes runs/<record["run_id"]>.json, and keeps its
  // active/<id> marker: present while the status is unfinished.
  Status write(const nlohmann::json& record) const;
  // Run ids with an active/ marker (unfinished, or killed before finishing).
  std::vector<std::string> active_run_ids() const;
  // Removes the active/ marker of a run (missing is fine).
  void clear_active(const std::string& run_id) const;
  Result<nlohmann::json> read(const std::string& run_id) const;
  // Records and text files of other kinds ("tasks"), same atomic writes.
  Status write_in(const std::string& subdir, const std::string& id, const nlohmann::json& record) const;
  Status write_text(const std::string& subdir, const std::string& name, const std::string& text,
                    Durability d = Durability::kSynced) const;
  Result<nlohmann::json> read_in(const std::string& subdir, const std::string& id) const;
  Result<std::string> read_text(const std::string& subdir, const std::string& name) const;
  // The newest `limit` records (by run id), newest first. Unreadable files
  // are skipped and reported in `problems`.
  std::vector<nlohmann::json> recent(std::size_t limit, std::vector<std::string>* problems) const;

 private:
  std::string dir_;
};

// A run whose record has this status has ended: passed, failed, refused,
// error, planner_error, interrupted. Anything else ("running", "planning", "")
// is unfinished: its process is at work, or was killed before it could say.
bool is_finished_status(const std::string& status);

}  // namespace lazyagent
