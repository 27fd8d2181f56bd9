// Sessions: an agent works inside the sandbox. A private working copy of a
// seed (never the user's tree), changed only by the agent, in which every
// command runs under the sandbox policy; the copy is read back as hostile
// input (session_files.h) and proven through the ordinary `test` pipeline
// in a fresh sandbox (never the session's: a verdict is never taken from it).
//
// Two isolation models (sessions.isolation, chosen at open, in the record):
//
// live (the default): one long-lived sandbox per session (engine.h
// LiveSandbox), made at open with the whole policy (network none, no
// secrets, read-only root, seccomp, no capabilities, the user namespace,
// limits, the capped working copy bind-mounted at /work), its effective
// config verified and the isolation probe judged once. Each command is an
// exec into the session's persistent shell (policy/live_shell.h): cd and
// exports carry over, background jobs run on between commands within the
// session's limits. A timeout ends the command's processes, not the
// session. While the host reads the copy (read, write, diff, prove's
// snapshot) the sandbox is frozen (the cgroup freezer), thawed after. The
// sandbox ends itself at sessions.max_age_seconds even when no process of
// ours is left; close, `reap` (idle TTL, max age) remove it before the copy.
//
// per-command: a fresh sandbox container per command over the working copy,
// bind-mounted read-write at /work into that command's container only. Each
// command goes through the engine's whole path (create, verify, start, wait
// with the deadline, bounded logs with the probe judged, remove). Nothing
// runs between commands; the copy is the only state a command passes on.
//
// Refused on engines that cannot bind-mount the copy (Kubernetes).
//
// A command of a process killed mid-exec (kill -9) leaves the record's
// pending exec: the next command, close and `reap` end it (live: its
// processes; per-command: its container, its owner dead) before anything else
// touches the copy; a reader killed while the sandbox was frozen leaves the
// record's `frozen`, and the next holder thaws it.
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
  std::string isolation;       // the session's: "live" or "per-command"
  // Live only: the shell that ran it, whether this command started it, and
  // whether the command ended it (exit, exec, killed: the next gets a fresh one).
  std::string shell;
  bool fresh_shell = false;
  bool shell_ended = false;
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
// A live session's sandbox frozen while the host reads its copy: thawed
// (and the record's `frozen` cleared) when this goes, before the lock.
class FrozenSandbox {
 public:
  FrozenSandbox() = default;
  FrozenSandbox(std::unique_ptr<LiveSandbox> live, const SessionStore* store, std::string id)
      : live_(std::move(live)), store_(store), id_(std::move(id)) {}
  FrozenSandbox(FrozenSandbox&&) noexcept = default;
  FrozenSandbox& operator=(FrozenSandbox&&) noexcept = default;
  ~FrozenSandbox();

 private:
  std::unique_ptr<LiveSandbox> live_;
  const SessionStore* store_ = nullptr;
  std::string id_;
};

enum class HoldFor { kCommand, kRead };

struct HeldSession {
  SessionLock lock;
  SessionRecord record;
  FrozenSandbox frozen;  // kRead of a live session
};
// kRead: a live session's sandbox is frozen until the HeldSession goes (the
// host reads, writes or diffs the copy). `engine` may be null only for a
// per-command session's read.
Result<HeldSession> hold_session(const std::string& id, Engine* engine, const SessionStore& store,
                                 HoldFor purpose = HoldFor::kCommand);

// `reap`: closes sessions past their idle TTL or maximum age, and removes
// session directories with no record (a crash during open) older than a
// minute. Busy sessions are left alone. Returns "ID (why)" per session closed.
// A live session's sandbox goes first (through `engine`; null: the engine's
// reaper removes it once the record is gone).
std::vector<std::string> reap_sessions(const SessionStore& store, std::int64_t now, std::vector<std::string>* errors,
                                       Engine* engine = nullptr);

// `session list --json` / `sandboxes`: each record with `expires_in` seconds
// (or `expired`: why).
nlohmann::json sessions_json(const SessionStore& store, std::int64_t now);

}  // namespace lazyagent
