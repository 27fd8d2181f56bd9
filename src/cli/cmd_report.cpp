// `lazyagent-oci report html EVAL_OUT_DIR PATH`: the HTML report of an eval
// already run (finished, interrupted or resumed), from its out directory.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "report/report_file.h"
#include "util/terminal_text.h"

namespace lazyagent {

int cmd_report(const std::vector<std::string>& args) {
  std::string format, out_dir, path;
  bool as_json = false;
  ArgParser p("report", "html EVAL_OUT_DIR PATH [--json]",
              "Writes one self-contained HTML page about an eval from its --out directory (summary.json and\n"
              "results/*.json): counts per category, the suspicious tasks that passed first, the resolved\n"
              "rate, refusals by reason code, infrastructure errors, isolation violations, charts of task\n"
              "durations, time per pipeline step and CPU/memory per task, and every task with its reason,\n"
              "triage, diff (from this machine's run store), test output and the commands to verify, diff and\n"
              "apply its run; filter and sort in the page, no server. The page loads nothing and runs no\n"
              "script but its own (a Content-Security-Policy says so); every text from the eval is escaped\n"
              "and control or bidi characters are shown as <U+XXXX>. `eval --report html:PATH` writes the\n"
              "same page at the end of an eval. Exit 0: written; 2: no summary.json in the directory.");
  p.positional("html", &format, true, "the report's format (html)", {"html"});
  p.positional("EVAL_OUT_DIR", &out_dir, true, "an eval's --out directory");
  p.positional("PATH", &path, true, "where to write the page");
  p.flag("--json", &as_json, "print {report, tasks, bytes, diffs} as one JSON object");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (format != "html") {
    return report_error(usage_error("report: unknown format '" + format + "' (expected html)"), as_json);
  }
  auto written = write_html_report(out_dir, path, default_run_store());
  if (!written) return report_error(written.error(), as_json);
  if (as_json) {
    std::cout << nlohmann::json{{"report", path}, {"tasks", written->tasks}, {"bytes", written->bytes},
                                {"diffs", written->diffs}}
                     .dump(2)
              << std::endl;
  } else {
    std::cout << "report: " << escape_for_terminal(path) << " (" << written->tasks << " task(s), " << written->bytes
              << " bytes, " << written->diffs << " diff(s))\n";
  }
  return 0;
}

}  // namespace lazyagent
