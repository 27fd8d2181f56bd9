// A live session's sandbox on podman (engine.h LiveSandbox; the shell's
// protocol is policy/live_shell.h).
//
//   open    create with the session's policy and its working copy at /work,
//           init, the effective config verified (as every sandbox's), start,
//           then the isolation probe run once as an exec and judged: any
//           violation removes it and refuses the session
//   exec    POST /containers/{id}/exec + /exec/{id}/start (output streamed,
//           head and tail kept) + /exec/{id}/json (the client's exit code);
//           at the deadline the transfer stops and an exec of the ending
//           program ends the command's processes
//   freeze  POST /containers/{id}/pause (the cgroup freezer), thaw: unpause
//   remove  DELETE, confirmed gone
// Its first process waits for the session's maximum age, and the container is
// made with podman's auto-remove: with every process of ours gone, it still
// ends and leaves no container. The reaper (podman_reaper.h) removes one whose
// session's record is gone (closed, reaped) or whose end has passed.
// PodmanEngine::open_live and ::live are defined in live_sandbox.cpp.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/podman/podman_client.h"
#include "policy/sandbox_policy.h"

namespace lazyagent {

inline constexpr const char* kRoleSession = "session";
// The run store whose sessions/<run>/ the container belongs to, and when it ends (unix seconds).
inline constexpr const char* kLabelSessionStore = "io.lazyagent.session-store";
inline constexpr const char* kLabelSessionEnds = "io.lazyagent.session-ends";

// Creates, verifies, starts and probes the live sandbox `req` asks for
// (req.live_seconds > 0); on any failure nothing is left.
Result<std::unique_ptr<LiveSandbox>> open_podman_live(PodmanClient& podman, const SandboxRequest& req);

// The live sandbox `id` on `podman`'s service.
std::unique_ptr<LiveSandbox> podman_live(PodmanClient& podman, const std::string& id);

// Whether the reaper keeps a session container with these labels: its
// session's record is still in `store_dir` (a run store's directory) and
// its end has not passed. One of another run store is not ours to judge
// (kept). Pure but for the record's existence.
bool live_session_kept(const std::map<std::string, std::string>& labels, const std::string& store_dir,
                       std::time_t now);

}  // namespace lazyagent
