// Finding and removing what a crashed run left behind.
//
// A run killed with SIGKILL cannot clean up. Its containers keep our labels
// (sandbox_policy.h) and its private seed copy stays under the run store's
// work/ directory. Every `test`/`run` start and `lazyagent-oci reap` remove
// those whose owner process is gone (ownership.h), and the temp files of
// atomic writes a crash interrupted; containers of live runs
// (a concurrent `eval`, another terminal) are left alone unless `all`.
#pragma once

#include <string>
#include <vector>

#include "engine.h"
#include "podman_client.h"
#include "result.h"
#include "run_store.h"

namespace lazyagent {

Result<ReapReport> reap_leftovers(PodmanClient& podman, const RunStore& store, bool all);

}  // namespace lazyagent
