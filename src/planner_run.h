// Running the planner container for one task, from the orchestrator.
//
// Steps: check the image and the three provider secrets exist; create the
// container (planner_policy.h); upload the task as a tar into /task; start;
// wait with the host-side deadline; read stdout (the patch) and stderr (the
// task log) separately; remove the container on every path. The task log is
// kept in the run store as the task record (tasks/<task-id>.log, .json).
// Nothing from the planner is trusted: the patch it returns is validated
// again by the caller.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "planner_task.h"
#include "podman_client.h"
#include "result.h"
#include "run_store.h"
#include "sandbox_run.h"

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
};

// Runs the planner; an engine failure is an Error, a provider failure or a
// refused reply is an outcome with exit_code 3 or 4.
Result<PlannerOutcome> run_planner(PodmanClient& podman, const RunStore& store,
                                   const Config& config, const PlannerTask& task,
                                   const std::string& run_id, const ProgressFn& progress);

// The task record: what `task show` prints.
nlohmann::json task_record(const PlannerOutcome& o, const std::string& run_id);

// Parses the last "planner-summary: {...}" line of a log (null when absent).
nlohmann::json parse_planner_summary(const std::string& log);

}  // namespace lazyagent
