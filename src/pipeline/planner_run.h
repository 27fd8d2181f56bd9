// Running the planner for one task, from the orchestrator, on any engine
// (engine.h: a podman container, or a Kubernetes Job).
//
// Steps: check the provider settings exist (podman secrets, a Secret) and
// the image; create the planner with its task (planner_policy.h; podman
// uploads the task as a tar into /task, Kubernetes mounts a ConfigMap);
// start; wait with the host-side deadline; read stdout (the patch) and stderr
// (the task log) separately; remove it on every path. The task log is kept in
// the run store as the task record (tasks/<task-id>.log, .json). Nothing from
// the planner is trusted: the patch it returns is validated again by the
// caller.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "contract/planner_task.h"
#include "engine/engine.h"
#include "util/result.h"
#include "store/run_store.h"
#include "pipeline/run_result.h"

namespace lazyagent {

struct PlannerOutcome {
  std::string task_id;
  std::string container_id;
  int exit_code = -1;
  bool timed_out = false;
  std::string patch_json;  // stdout
  std::string log;         // stderr, bounded
  nlohmann::json summary;  // the planner-summary line
  std::string image_digest;
  long ms = 0;
  nlohmann::json objects;  // the engine's names for it (Kubernetes: job, pod)
};

// Runs the planner; an engine failure is an Error, a provider failure or a
// refused reply is an outcome with exit_code 3 or 4.
Result<PlannerOutcome> run_planner(Engine& engine, const RunStore& store, const Config& config,
                                   const PlannerTask& task, const SeedSnapshot& seed, const std::string& run_id,
                                   const ProgressFn& progress);

// What went wrong in a planner that did not give a patch, for the user: its
// summary's error, else its last log line (e.g. a missing secret), else its
// exit status (kPlanner).
Error planner_error(const PlannerOutcome& o);

// The task record: what `task show` prints.
nlohmann::json task_record(const PlannerOutcome& o, const std::string& run_id);

// Parses the last "planner-summary: {...}" line of a log (null when absent).
nlohmann::json parse_planner_summary(const std::string& log);

}  // namespace lazyagent
