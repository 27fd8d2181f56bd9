// `--events jsonl` and `--events-fd N` (test, run, eval): one JSON object a
// line for each step's start and end, the test output as it arrives, notes,
// and the final result (or error). The schema, with its version, is
// docs/events.md; kEventsSchema changes when a field changes meaning or goes.
//
// On stderr (the default), stderr then carries nothing else: the process's
// own fd 2 is pointed at /dev/null once the stream holds a copy of it, so
// that the progress lines and error messages people read come only as
// `note` and `error` events, and every line parses. On another fd, stderr
// keeps its usual lines.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_args.h"
#include "pipeline/run_events.h"
#include "pipeline/run_result.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr int kEventsSchema = 1;

struct EventOptions {
  std::string format;  // "" = none, "jsonl"
  long fd = -1;        // -1 = stderr
};

void add_event_options(ArgParser& p, EventOptions* o);

class EventStream {
 public:
  // nullptr when no events were asked for; a usage error for a format other
  // than jsonl or an fd that is not open for writing.
  static Result<std::shared_ptr<EventStream>> open(const EventOptions& o, const std::string& command);
  ~EventStream();

  // Adds schema, seq, t_ms (since the stream opened) and `event`; writes one line.
  void emit(const std::string& event, nlohmann::json fields = nlohmann::json::object());
  void run_event(const RunEvent& e);
  // The progress callback: a `note` event, and the "==> " line on stderr
  // unless the events are there.
  ProgressFn progress();
  // The last event: `result` with what --json prints, or `error`.
  void finish(const Result<RunResult>& r);
  void finish_error(const Error& e);

 private:
  EventStream(int fd, bool owns_fd, std::string command);
  void write_line(const std::string& line);

  int fd_;
  bool owns_fd_;
  bool on_stderr_;
  std::string command_;
  std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  long seq_ = 0;
};

// The start `test` and `run` share: `p` gets the event options and --json,
// parses `args`, and the event stream opens. `done` set: exit with it now
// (--help, a bad option, a stream that cannot open).
struct StreamedCommand {
  std::optional<int> done;
  bool json = false;
  std::shared_ptr<EventStream> events;
  // Reports `e` (the stream's last event too) and returns the exit code.
  int fail(const Error& e) const;
  // The run's progress callback: the stream's (a `note` event) when there
  // is one, which then also gets the run's events through `*run_events`;
  // else the "==> " lines on stderr.
  ProgressFn progress(RunEventFn* run_events) const;
};
StreamedCommand start_streamed_command(ArgParser& p, const std::vector<std::string>& args, const char* command);

}  // namespace lazyagent
