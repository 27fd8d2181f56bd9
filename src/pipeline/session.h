// Sessions: an agent works inside the sandbox. A private working copy of a
// seed (never the user's tree), changed only by the agent, in which every
// command runs under the sandbox policy; the copy is read back as hostile
// input (session_files.h) and proven through the ordinary `test` pipeline.
//
// The exec model: a fresh sandbox container per command over the session's
// persistent working copy, which is bind-mounted read-write at /work into
// that command's container only (session_store.h for where it lives). Each
// command goes through the engine's whole path (engine.h): create, verify
// (the effective config against the policy, every time), start, wait with
// the deadline, bounded logs with the isolation and egress probe's block
// judged, remove, confirmed gone. So:
//   - nothing runs between commands: a process a command leaves behind (a
//     daemon, `sleep 1000 &`) dies with its container when the command ends;
//     it never sees the next command, nor outlives the session
//   - the copy is the only state a command passes to the next; /tmp, the
//     environment and every process are new each time
//   - while the host reads the copy (read, diff, prove) no container of the
//     session runs (the session lock keeps commands and reads apart)
// The alternative, one long-lived container with `podman exec` per command,
// is cheaper per command but lets a background process of one command run
// during the next and change the copy while the host reads it; its exec'd
// processes are not verified anew (README "Sessions" has the figures).
// Refused on engines that cannot bind-mount the copy (Kubernetes).
//
// A command of a process killed mid-exec (kill -9) leaves its container
// running until its deadline: the next command, close and `reap` see the
// record's pending exec and have the engine reap it (its owner is dead)
// before anything else touches the copy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "engine/engine.h"
#include "pipeline/engine_wait.h"
#include "pipeline/run_result.h"
#include "pipeline/session_store.h"
#include "util/result.h"

namespace lazyagent {

// What `session open` was given (kept in the record, so that every later
// command rebuilds the same config).
struct SessionOpen {
  Config config;             // effective: the flags applied
  std::string config_path;   // "" = built-in defaults
  std::vector<std::string> allow;
  std::string test_command;
};

// Opens a session: the engine checked (dead runs reaped), the seed
// snapshotted and copied twice (base/ and work/), the record written, then
// `true` run as the first command so that the policy is verified and the
// probe judged before the agent's first command.
Result<SessionRecord> open_session(const SessionOpen& open, Engine& engine, const SessionStore& store,
                                   const ProgressFn& progress);

struct ExecRequest {
  std::string command;             // run by /bin/sh -c in /work
  std::int64_t timeout_seconds = 120;
  // The output's lines as they come (another thread), when set.
  std::function<void(const std::string&)> output;
  // What the command says of its own way, when set (else `progress` hears
  // it): an outage of the engine waited out (engine_wait.h).
  ProgressFn notes;
};

struct ExecResult {
  std::string session_id;
  std::string exec_id;         // "<session>-<n>": the container's run label
  std::string sandbox_id;      // the container (removed)
  int exit_code = -1;
  bool timed_out = false;
  std::string output;          // valid UTF-8, at most limits.log_bytes and the cut marker
  bool truncated = false;
  std::vector<StepTiming> timings;
  long ms = 0;                 // the whole round trip
  std::vector<EngineOutageLog> outages;  // outages of the engine it waited out (engine_wait.h)
};

nlohmann::json exec_result_json(const ExecResult& r);

// Runs one command in the session (see the top of this file). `config` is
// the session's (session_config in the CLI). An isolation violation is an
// Error of kind kIsolation; a failing command is a result. An outage of the
// engine is waited out within req.timeout_seconds (engine_wait.h; `progress`
// says so); past it, or when it cut the start short, an error of kind
// kUnreachable (retryable) that keeps the session.
Result<ExecResult> exec_in_session(const std::string& id, const Config& config, const ExecRequest& req,
                                   Engine& engine, const SessionStore& store, const ProgressFn& progress);

// Waits for the session's running command, reaps what a killed one left,
// then removes the copy and the record.
Status close_session(const std::string& id, Engine& engine, const SessionStore& store);

// The session's lock held, its record fresh and not expired, and any command
// a dead process left running reaped: what every command but open needs first.
struct HeldSession {
  SessionLock lock;
  SessionRecord record;
};
Result<HeldSession> hold_session(const std::string& id, Engine* engine, const SessionStore& store);

// `reap`: closes sessions past their idle TTL or maximum age, and removes
// session directories with no record (a crash during open) older than a
// minute. Busy sessions are left alone. Returns "ID (why)" per session closed.
std::vector<std::string> reap_sessions(const SessionStore& store, std::int64_t now, std::vector<std::string>* errors);

// `session list --json` / `sandboxes`: each record with `expires_in` seconds
// (or `expired`: why).
nlohmann::json sessions_json(const SessionStore& store, std::int64_t now);

}  // namespace lazyagent
