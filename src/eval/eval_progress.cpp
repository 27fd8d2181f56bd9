#include "eval/eval_progress.h"

#include <ostream>

#include "util/terminal_text.h"

namespace lazyagent {

std::string progress_bar(std::size_t done, std::size_t total, const CategoryCounts& counts,
                         std::size_t bar_width) {
  const std::size_t filled = total ? done * bar_width / total : bar_width;
  std::string s = "[" + std::string(filled, '#') + std::string(bar_width - filled, '-') + "] ";
  const std::string d = std::to_string(done), t = std::to_string(total);
  s += std::string(t.size() > d.size() ? t.size() - d.size() : 0, ' ') + d + "/" + t + " ";
  for (Category c : kAllCategories) s += std::string(" ") + category_name(c) + " " + std::to_string(counts[static_cast<int>(c)]);
  return s;
}

std::string progress_event_line(const EvalEvent& e, std::size_t done, std::size_t total) {
  const std::string where = "eval: [" + std::to_string(done) + "/" + std::to_string(total) + "] " + e.row.id + ": ";
  if (e.kind == EvalEvent::Kind::kSkipped) {
    return where + "skipped (" + category_name(e.row.category) + " in an earlier run)";
  }
  std::string s = where + category_name(e.row.category) + " (" + std::to_string(e.row.attempts) +
                  (e.row.attempts == 1 ? " attempt, " : " attempts, ") + std::to_string(e.row.ms) + " ms)";
  if (!e.row.reason.empty() && e.row.category != Category::kPassed) s += ": " + e.row.reason;
  if (!e.row.changed.empty()) {
    s += " [ran again, changed:";
    for (const auto& part : e.row.changed) s += " " + part;
    s += "]";
  }
  return escape_for_terminal(s);
}

void EvalProgress::start() {
  if (!tty_) return;
  out_ << "\r\x1b[K" << progress_bar(0, total_, counts_) << std::flush;
  drawn_ = true;
}

void EvalProgress::on_event(const EvalEvent& e) {
  if (e.kind == EvalEvent::Kind::kStarted) return;
  if (e.kind == EvalEvent::Kind::kOutage) {  // its own line, the bar redrawn under it
    out_ << (tty_ && drawn_ ? "\r\x1b[K" : "") << escape_for_terminal("eval: " + outage_line(e.outage)) << "\n";
    if (tty_ && drawn_) out_ << progress_bar(done_, total_, counts_);
    out_ << std::flush;
    return;
  }
  ++done_;
  ++counts_[static_cast<int>(e.row.category)];
  if (tty_) {
    out_ << "\r\x1b[K" << progress_bar(done_, total_, counts_) << std::flush;
    drawn_ = true;
  } else {
    out_ << progress_event_line(e, done_, total_) << std::endl;
  }
}

void EvalProgress::finish() {
  if (tty_ && drawn_) out_ << "\n" << std::flush;
}

}  // namespace lazyagent
