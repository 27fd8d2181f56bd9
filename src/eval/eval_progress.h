// Progress of `lazyagent-oci eval` on stderr: a bar redrawn in place when
// stderr is a terminal, one plain line per finished task otherwise (logs, CI).
// The text is built by pure functions; EvalProgress only writes it.
#pragma once

#include <array>
#include <cstddef>
#include <iosfwd>
#include <string>

#include "eval/eval_runner.h"

namespace lazyagent {

using CategoryCounts = std::array<std::size_t, kCategoryCount>;  // indexed by Category

// "[##########----------]  25/50  passed 20 failed 3 refused 2 infra_error 0 flaky 0
// isolation_violation 0"
std::string progress_bar(std::size_t done, std::size_t total, const CategoryCounts& counts,
                         std::size_t bar_width = 24);

// "eval: [25/50] fix-3: failed (2 attempts, 412 ms): tests failed: ..." / "... skipped ...".
// (An outage of the engine has its own line: "eval: " + outage_line, eval_outage.h.)
std::string progress_event_line(const EvalEvent& e, std::size_t done, std::size_t total);

class EvalProgress {
 public:
  EvalProgress(std::ostream& out, bool tty, std::size_t total) : out_(out), tty_(tty), total_(total) {}
  void start();                       // draws the empty bar (terminal only)
  void on_event(const EvalEvent& e);  // not thread-safe: the runner serialises calls
  void finish();                      // ends the bar's line

 private:
  std::ostream& out_;
  bool tty_;
  std::size_t total_;
  std::size_t done_ = 0;
  CategoryCounts counts_{};
  bool drawn_ = false;
};

}  // namespace lazyagent
