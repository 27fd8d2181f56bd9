// The run store's own leftovers, whatever engine ran the runs: what `reap`
// and the start of every `test`/`run`/`eval` sweep on podman and on
// Kubernetes alike (each engine adds the removal of its own objects).
//
//   - temp files of atomic writes (<name>.tmp.<pid>, run_store.h) whose
//     writer died before its rename: never records, removed once that pid is
//     gone;
//   - the records of runs whose owner process is gone (ownership.h) while the
//     record still says "running" (or "planning"): closed as "interrupted",
//     with the reason, found through the run store's active/ markers. Records
//     of live runs are never touched.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/run_store.h"

namespace lazyagent {

// What Engine::reap found and did.
struct ReapReport {
  std::vector<std::string> removed;       // "lazyagent-sandbox-r-... (3f2a...)", "default/r-..."
  std::vector<std::string> left_running;  // owned by a live process
  std::vector<std::string> work_dirs_removed;
  std::vector<std::string> temp_files_removed;  // "runs/<id>.json.tmp.<pid>" of dead writers
  std::vector<std::string> records_closed;      // run ids whose records now say "interrupted"
  std::vector<std::string> cgroups_removed;     // /lazyagent/<name> cgroups of runs with no container left
  std::vector<std::string> networks_removed;    // egress allow-list networks (egress_proxy.h) of dead owners
  std::vector<std::string> errors;
  // Unclaimed, unexpired warm spares of this run store left in place: a run
  // started by this process may claim one (warm_spares.h).
  std::vector<std::string> spares_left;
};

// Both sweeps below, into `report`.
void sweep_store(const RunStore& store, ReapReport* report);

// Removes the temp files of dead writers under runs/ and tasks/; appends
// them to report->temp_files_removed ("runs/<name>").
void sweep_temp_files(const RunStore& store, ReapReport* report);

// The record-closing part (no engine needed): every run with an active/
// marker whose owner process is gone and whose record is unfinished is
// rewritten as status "interrupted" with `error` saying why (provenance
// rebuilt); markers of finished or missing records are removed. Appends to
// report->records_closed / errors.
void close_abandoned_records(const RunStore& store, ReapReport* report);

// Whether the process a run record names as its owner is alive (ownership.h:
// a record from another host counts as alive).
bool run_owner_alive(const nlohmann::json& record);

// The `error` an abandoned record gets (pure).
std::string abandoned_run_reason(const std::string& previous_status, long pid, const std::string& user_host);

}  // namespace lazyagent
