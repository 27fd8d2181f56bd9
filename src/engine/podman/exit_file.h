// The container's exit as conmon records it, without podman's wait.
//
// Podman's wait (POST /containers/{id}/wait) returns only after the exit
// command conmon runs (`podman container cleanup`: storage unmounted, cgroup
// removed) has released the container's lock: measured here 200-600 ms after
// the process exited, for a test that itself ran 10-100 ms. Conmon writes the
// exit code to <exit dir>/<container id> as soon as it has drained the
// container's output to the log (measured: the logs read then are byte for
// byte those read after podman's wait, 1.2 MB, 5 of 5), so a run's verdict
// needs only that file. The exit dir is conmon's --exit-dir argument, read
// from /proc/<conmon pid>/cmdline (we run on the podman host: the verifier
// reads podman's OCI spec from disk the same way).
#pragma once

#include <functional>
#include <string>

#include "util/result.h"

namespace lazyagent {

// Conmon's --exit-dir from its command line (NUL-separated); "" when absent.
std::string exit_dir_from_cmdline(const std::string& cmdline);

// The --exit-dir of the conmon with this pid; "" when it cannot be read.
std::string conmon_exit_dir(long conmon_pid);

// Waits until `path` holds an exit code (decimal, as conmon writes it);
// an error of kind kTimeout once deadline_ms passed, kInterrupted on a
// signal (interrupt.h). Every kAliveCheckMs it calls `alive` (podman's
// ping): its error ends the wait at once (a service that went away is an
// engine error now, not when the test ends).
inline constexpr long kAliveCheckMs = 500;
Result<int> wait_for_exit_file(const std::string& path, long deadline_ms, const std::function<Status()>& alive);

}  // namespace lazyagent
