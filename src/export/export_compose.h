// The two containers of a run as a podman-compose stack. Pure.
//
// Export layout (the export command writes seed/; this file makes the rest):
//   compose.yaml      services `planner` and `sandbox`
//   task/task.json    the planner's task (planner_task.h), mounted read-only
//                     at /task: the tool's own output, not a user path
//   seed/             the private copy of the seed (+ the patch), mounted
//                     read-only at /seed in the sandbox
//   run-planner.sh    podman-compose run for each service, plus the podman
//   run-sandbox.sh    flags compose.yaml cannot carry (see below)
//   README.txt
//
// Target: podman-compose 1.3.0 (scripts/install-podman-compose.sh; Debian
// 12's 1.0.3 attaches a network next to `network_mode: none` and fails).
// What 1.3.0 does with a compose file, read from its source and checked here:
//   * `pids_limit` and `memswap_limit` are silently ignored, and podman run
//     adds writable, size-uncapped tmpfs at /run and /var/tmp to read-only
//     containers, an environment of its own and no deadline. The run scripts
//     pass --pids-limit, --memory-swap, --read-only-tmpfs=false,
//     --unsetenv-all and --timeout through --podman-run-args. The compose file
//     still states pids_limit and memswap_limit for engines that honour them.
//   * external secrets are mounted under their own names only (a `target`
//     is refused), so the planner's entrypoint links /run/secrets/<NAME> to
//     the file names `plan` reads (base_url, model, api_key) in a private
//     directory; the values stay in files and never enter the environment.
//   * `$` in any string is interpolation: every `$` is written as `$$`.
//   * `x-podman: {in_pod: false}`: no pod, so nothing is shared between
//     the two services.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "export/export_common.h"

namespace lazyagent {

inline constexpr const char* kComposeSeedDir = "seed";
inline constexpr const char* kComposeTaskDir = "task";

// The compose document (services, secrets, x-podman), as written to
// compose.yaml, `$` already escaped.
nlohmann::ordered_json compose_document(const ExportInput& in);

// The podman run flags podman-compose 1.3.0 cannot take from compose.yaml,
// for the sandbox and the planner service.
std::string sandbox_run_args(const SandboxPolicy& p);
std::string planner_run_args(const PlannerRequest& r);

Result<ExportBundle> export_compose(const ExportInput& in);

}  // namespace lazyagent
