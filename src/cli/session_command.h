// What `lazyagent-oci session ...` and the MCP server's session_* tools
// share (pipeline/session.h does the work): a session's config rebuilt from
// its record, its engine, and the diff and prove steps as both call them.
#pragma once

#include <sys/types.h>

#include <string>

#include "cli/cli.h"
#include "cli/mcp_server.h"
#include "engine/engine.h"
#include "pipeline/run_result.h"
#include "pipeline/session.h"
#include "pipeline/session_copy.h"
#include "pipeline/session_files.h"

namespace lazyagent {

// The most a `read` returns and a `write` takes: a patch's hard cap.
inline constexpr std::size_t kSessionFileBytes = 4 * 1024 * 1024;

// The config a session was opened with (its file and flags, from the record).
Result<Config> session_config(const SessionRecord& rec);

// Opens a session for the project `project` names (the same flags as `test`).
Result<SessionRecord> open_session_for(const ProjectOptions& project, bool accept_weaker, const RunStore& store,
                                       const ProgressFn& progress);

// The session's config and a podman engine for it.
struct SessionContext {
  SessionRecord record;
  Config config;
  std::unique_ptr<Engine> engine;
};
Result<SessionContext> session_context(const std::string& id, const RunStore& store);

// The working copy against the seed at open (session_files.h), under the lock.
Result<CopyDiff> session_diff(const SessionContext& s, const SessionStore& store);

// The session's change through the ordinary `test` (contract, fresh
// sandbox, baseline, verdict): the result `test --json` prints. A session
// with no change is a usage error.
// `sign_key` "" = the session's config's signing.key (signed verdicts).
Result<RunResult> session_prove(const SessionContext& s, const RunStore& store, const ProgressFn& progress,
                                const std::string& sign_key = "");

// `session diff --json` / the session_diff tool.
nlohmann::json session_diff_json(const std::string& id, const CopyDiff& d);

// Before a per-command session's command: its container's removal deferred
// until after the answer (WarmPool::defer_removals), and the session's
// removals lock taken (shared) now, so that a `close` sent as soon as the
// answer is out waits for that removal. Nothing for a live session (not held).
SessionLock defer_removal(Engine& engine, const SessionStore& sessions, const SessionRecord& rec);
// After that command: removes its container in a detached child that holds
// `removals` (`close` waits for it), so that the caller answers first. The
// child's pid (0 when none was needed or the fork failed: then removed here).
pid_t remove_after_answer(Engine& engine, SessionLock removals);

// The MCP server's session_* tools (mcp_session_tools.cpp).
std::vector<McpTool> mcp_session_tools(const std::string& config_path, const Config& config);

int cmd_session(const std::vector<std::string>& args);
// session's subcommands (open, exec, ...): its dispatch, help and completion.
const std::vector<Command>& session_subcommands();
int cmd_session_files(const std::string& sub, const std::vector<std::string>& args);

}  // namespace lazyagent
