// Finding and removing what a crashed run left behind.
//
// A run killed with SIGKILL cannot clean up. Its containers keep our labels
// (sandbox_policy.h), its private seed copy stays under the run store's
// work/ directory, and its record still says "running" (or "planning").
// Every `test`/`run`/`eval` start and `lazyagent-oci reap` remove
// those whose owner process is gone (ownership.h), and the temp files of
// atomic writes a crash interrupted, and close the records of those runs as
// "interrupted", with the reason (found through the run store's active/
// markers, run_store.h). Containers of live runs (a concurrent `eval`,
// another terminal) are left alone unless `all`; records of live runs are
// never touched.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/podman/podman_client.h"
#include "util/result.h"
#include "pipeline/run_store.h"

namespace lazyagent {

Result<ReapReport> reap_leftovers(PodmanClient& podman, const RunStore& store, bool all);

// The record-closing part of the reaper (no podman needed): every run with
// an active/ marker whose owner process is gone and whose record is
// unfinished is rewritten as status "interrupted" with `error` saying why
// (provenance rebuilt); markers of finished or missing records are removed.
// Appends to report->records_closed / errors.
void close_abandoned_records(const RunStore& store, ReapReport* report);

// Whether the process a run record names as its owner is alive (ownership.h:
// a record from another host counts as alive).
bool run_owner_alive(const nlohmann::json& record);

// The `error` an abandoned record gets (pure).
std::string abandoned_run_reason(const std::string& previous_status, long pid, const std::string& user_host);

}  // namespace lazyagent
