// A live session's persistent shell (pipeline/session.h, isolation "live"):
// the programs the engine execs into the session's long-lived sandbox, and
// the reading of what they print. Pure.
//
// The sandbox's first process (live_keeper_argv) only waits for the
// session's deadline (sessions.max_age_seconds): when it ends, the
// container ends and podman removes it, whoever is left to ask.
//
// Each command is one exec of live_command_argv. That client, inside the
// sandbox:
//   1. draws a fresh 128-bit nonce from /dev/urandom and prints it as its
//      first line, before the command exists (the host learns it there; it
//      is in no argv, environment or file the command can read);
//   2. makes the scratch $TMPDIR in /work if it is missing (sandbox_policy.h),
//      and starts the session's shell if none runs (bash where the image has it,
//      else sh), reading its commands from a FIFO under /tmp/.lazyagent-shell;
//   3. writes the command to a file and hands the shell one line that
//      sources it (`.`, so cd and export carry over) with stdin /dev/null and
//      stdout+stderr appended to a file of this command, then appends
//      "\n<nonce> $?";
//   4. follows that file (tail -f, ended when the shell ends) through sed
//      until the line "<nonce> <code>": the end and the command's own exit
//      code. Background jobs are not waited for and run on; what they print
//      later goes to the file, unlinked after the command (no reader they
//      could block on or die writing to: SIGPIPE).
// When the shell ends before that line (the command ran `exit`, `exec`, or
// killed it), the client says so ("<nonce> shell <code>") and the next
// command gets a fresh shell. The host takes the end only from the last line
// of the stream, and only with the nonce of the first (parse below): output
// cannot forge it.
//
// At a timeout the host execs live_end_argv: every process started since the
// command began (the command and what it started) is killed, background
// jobs of earlier commands live on; a shell stuck in the command itself (a
// loop of builtins) is killed too (the next command gets a fresh one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lazyagent {

// The sandbox's first process: sleeps `lifetime_seconds`, reaping orphans,
// then exits (the container with it).
std::vector<std::string> live_keeper_argv(std::int64_t lifetime_seconds);

// Command `number` of the session, run in its shell (see above).
std::vector<std::string> live_command_argv(std::int64_t number, const std::string& command);

// Ends command `number` (a timeout, or a caller that died mid-command);
// nothing when another command (or none) is running.
std::vector<std::string> live_end_argv(std::int64_t number);

// The isolation probe (isolation_probe.h) run once in the live sandbox,
// with the egress probe's targets.
std::vector<std::string> live_probe_argv(const std::string& egress_targets);

// What one command's exec printed, read back.
struct LiveOutput {
  bool ended = false;        // the stream ended with its nonce's end line
  bool shell_ended = false;  // ... saying the shell ended first (exit, exec, killed)
  int exit_code = -1;        // the command's (-1: not known)
  bool fresh_shell = false;  // the client started the shell for this command
  std::string shell;         // "bash" or "sh"
  std::string output;        // what the command printed, head and tail kept
  bool truncated = false;    // more than the budget came; the middle was cut
};

// The exec's output (demultiplexed) as it arrives; keeps the first
// `head_bytes` and the last `tail_bytes` of the command's output, and hands
// complete lines to `line` as they come (the end line never).
class LiveStream {
 public:
  LiveStream(std::size_t head_bytes, std::size_t tail_bytes, std::function<void(const std::string&)> line = {});
  void feed(std::string_view bytes);
  LiveOutput finish();

 private:
  void body(std::string_view bytes);
  void lines(std::string_view bytes);

  std::size_t head_bytes_, tail_bytes_;
  std::function<void(const std::string&)> line_;
  std::string first_;        // the client's first line, until its newline
  bool first_done_ = false;
  bool malformed_ = false;
  std::string head_, tail_;  // tail_: the last tail_bytes_ + kLiveEndRoom bytes after head_
  std::size_t total_ = 0;
  std::string partial_;      // an unfinished line for `line`
  std::vector<std::string> held_;  // the last two lines: one may be the end
};

}  // namespace lazyagent
