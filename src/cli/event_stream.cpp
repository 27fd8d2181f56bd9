#include "cli/event_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "cli/cli.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

void add_event_options(ArgParser& p, EventOptions* o) {
  p.option("--events", &o->format, "jsonl",
           "stream events as JSON Lines on stderr: steps, test output as it arrives, the result (docs/events.md)");
  p.integer("--events-fd", &o->fd, "N", "write the --events stream to file descriptor N instead of stderr", 0, 65535);
}

Result<std::shared_ptr<EventStream>> EventStream::open(const EventOptions& o, const std::string& command) {
  if (o.format.empty() && o.fd < 0) return std::shared_ptr<EventStream>();
  if (!o.format.empty() && o.format != "jsonl") {
    return usage_error(command + ": --events: expected jsonl, got '" + o.format + "'");
  }
  if (o.fd == 0 || o.fd == 1) {
    return usage_error(command + ": --events-fd: " + std::to_string(o.fd) +
                       " is stdin or stdout (stdout is the result's); use 2 or a descriptor the caller opened");
  }
  const int fd = o.fd < 0 ? 2 : static_cast<int>(o.fd);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
    return usage_error(command + ": --events-fd: descriptor " + std::to_string(fd) + " is not open for writing");
  }
  if (fd != 2) return std::shared_ptr<EventStream>(new EventStream(fd, false, command));
  // On stderr: keep a copy for the events, and send everything else the
  // process writes to fd 2 to /dev/null, so that every line parses.
  const int copy = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (copy < 0 || null < 0) return usage_error(command + ": --events: cannot set up stderr");
  ::dup2(null, 2);
  ::close(null);
  auto s = std::shared_ptr<EventStream>(new EventStream(copy, true, command));
  s->on_stderr_ = true;
  return s;
}

EventStream::EventStream(int fd, bool owns_fd, std::string command)
    : fd_(fd), owns_fd_(owns_fd), on_stderr_(false), command_(std::move(command)),
      t0_(std::chrono::steady_clock::now()) {
  emit("start", {{"command", command_}, {"pid", static_cast<long>(::getpid())}});
}

EventStream::~EventStream() {
  if (owns_fd_) ::close(fd_);
}

void EventStream::write_line(const std::string& line) {
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a reader that went away (EPIPE) ends the stream, not the run
    off += static_cast<std::size_t>(n);
  }
}

void EventStream::emit(const std::string& event, json fields) {
  std::lock_guard<std::mutex> lock(mu_);
  json j = {{"schema", kEventsSchema},
            {"seq", ++seq_},
            {"t_ms", std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_).count()},
            {"event", event}};
  for (auto& [k, v] : fields.items()) j[k] = std::move(v);
  write_line(j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

void EventStream::run_event(const RunEvent& e) {
  json f = {{"run_id", e.run_id}};
  if (!e.task.empty()) f["task"] = e.task;
  if (e.baseline) f["baseline"] = true;
  switch (e.kind) {
    case RunEvent::Kind::kStepStart:
      f["step"] = e.step;
      break;
    case RunEvent::Kind::kStepEnd:
      f["step"] = e.step;
      f["ms"] = e.ms;
      f["ok"] = e.ok;
      break;
    case RunEvent::Kind::kOutput:
    case RunEvent::Kind::kNote:
      f["text"] = to_valid_utf8(e.text);
      if (e.truncated) f["truncated"] = true;
      break;
  }
  emit(run_event_kind_name(e.kind), std::move(f));
}

ProgressFn EventStream::progress() {
  return [this](const std::string& text) {
    if (!on_stderr_) progress_line(text);
    emit("note", {{"text", to_valid_utf8(text)}});
  };
}

void EventStream::finish(const Result<RunResult>& r) {
  if (!r) return finish_error(r.error());
  emit("result", {{"result", result_to_json(*r)}, {"exit_code", r->status == RunStatus::kRefused ? kExitRefused
                                                                  : r->tests_passed ? kExitPassed
                                                                                    : kExitFailed}});
}

void EventStream::finish_error(const Error& e) {
  json f = {{"error", to_valid_utf8(e.message)}, {"error_kind", error_kind_name(e.kind)}, {"exit_code", exit_code_for(e)}};
  for (const auto& [k, v] : e.ids) f[k] = v;
  if (is_retryable(e)) f["retryable"] = true;
  emit("error", std::move(f));
}

StreamedCommand start_streamed_command(ArgParser& p, const std::vector<std::string>& args, const char* command) {
  StreamedCommand c;
  EventOptions event_opts;
  add_event_options(p, &event_opts);
  p.flag("--json", &c.json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) {
    c.done = *done;
    return c;
  }
  auto stream = EventStream::open(event_opts, command);
  if (!stream) {
    c.done = report_error(stream.error(), c.json);
    return c;
  }
  c.events = *stream;
  return c;
}

int StreamedCommand::fail(const Error& e) const {
  if (events) events->finish_error(e);
  return report_error(e, json);
}

ProgressFn StreamedCommand::progress(RunEventFn* run_events) const {
  if (!events) return [](const std::string& step) { progress_line(step); };
  *run_events = [stream = events](const RunEvent& e) { stream->run_event(e); };
  return events->progress();
}

}  // namespace lazyagent
