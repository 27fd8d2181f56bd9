// What a run reports while it is under way, as values (the CLI's
// `--events jsonl` writes them, cli/event_stream.h; the MCP server turns them
// into progress notifications). The schema a consumer reads is docs/events.md.
//
//   step_start / step_end  one named step of one sandbox run (sandbox_run.h:
//                          validate, snapshot, ..., remove) or of the planner
//                          ("plan"); step_end carries its ms and whether it
//                          succeeded
//   output                 the test's output as it arrives, one line at a time
//                          (the isolation probe's block left out), bounded by
//                          the stream's own budget (kStreamedOutputBytes)
//   note                   the progress lines a person reads on stderr
//
// Every event names the run it belongs to (a `test` has a baseline run and a
// patched run, an eval many). Callbacks may come from several threads
// (eval's workers, the log follower): a sink locks.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace lazyagent {

// Bytes of test output one sandbox run streams as `output` events; past it,
// one event with `truncated` (the result's test_output is bounded apart).
inline constexpr std::size_t kStreamedOutputBytes = 256 * 1024;
// A longer line is cut (with `truncated`).
inline constexpr std::size_t kStreamedLineBytes = 4096;

struct RunEvent {
  enum class Kind { kStepStart, kStepEnd, kOutput, kNote };
  Kind kind = Kind::kNote;
  std::string run_id;
  std::string step;   // step_start / step_end
  long ms = 0;        // step_end
  bool ok = true;     // step_end
  std::string text;   // output (one line, no newline), note
  bool truncated = false;  // output: the line was cut, or the budget is spent
  bool baseline = false;   // the run is the seed's unpatched baseline
  std::string task;        // eval: the task the run belongs to ("" otherwise)
};

const char* run_event_kind_name(RunEvent::Kind k);

using RunEventFn = std::function<void(const RunEvent&)>;

}  // namespace lazyagent
