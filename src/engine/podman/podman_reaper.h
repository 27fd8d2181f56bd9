// Finding and removing what a crashed run left behind on podman.
//
// A run killed with SIGKILL cannot clean up. Its containers keep our labels
// (sandbox_policy.h), its private seed copy stays under the run store's
// work/ directory, and its cgroup stays; an allow-listed set-up or planner
// leaves its squid container and its internal network (egress_proxy.h),
// both labelled the same way. Every `test`/`run`/`eval` start and
// `lazyagent-oci reap` remove those whose owner process is gone
// (ownership.h), then sweep the run store (store_sweep.h: temp files of dead
// writers, records of dead runs closed as "interrupted"). Containers of live
// runs (a concurrent `eval`, another terminal) are left alone unless `all`;
// unclaimed warm spares stay until they expire.
#pragma once

#include "engine/engine.h"
#include "engine/podman/podman_client.h"
#include "store/run_store.h"
#include "store/store_sweep.h"
#include "util/result.h"

namespace lazyagent {

// `networks`: also list the egress allow-list networks (an extra call). The
// `reap` command always does; a run's start only when this pass removed a
// container of a dead run (a crash left something: its network may be there),
// so a cold run makes no call for them (the call-budget test keeps it so).
Result<ReapReport> reap_leftovers(PodmanClient& podman, const RunStore& store, bool all, bool networks = true);

}  // namespace lazyagent
