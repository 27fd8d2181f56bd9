// `lazyagent-oci run`: the whole job. Ask the planner for a patch (in its own
// container, the only one with the provider secrets), validate the patch
// again with the same contract, prove it in a fresh sandbox, report.
//
//   plan      build the task from the seed; run the planner container
//   (then the `test` pipeline of sandbox_run.h, with the planner's patch)
//
// A provider failure (exit 3) or a refused reply (exit 4) ends the run
// before any sandbox exists.
#pragma once

#include <string>

#include "config.h"
#include "podman_client.h"
#include "result.h"
#include "run_store.h"
#include "sandbox_run.h"

namespace lazyagent {

struct RunRequest {
  Config config;
  std::string instruction;  // "" = the default
  std::int64_t timeout_seconds = 120;
};

// `podman` runs the planner (the runc service: the planner needs a network);
// `sandbox_podman`, when set, runs the sandbox (the service of the sandbox's
// runtime, runtime_engine.h).
Result<TestResult> run_agent(const RunRequest& req, PodmanClient& podman, const RunStore& store,
                             const ProgressFn& progress, PodmanClient* sandbox_podman = nullptr);

}  // namespace lazyagent
