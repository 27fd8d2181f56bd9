// `lazyagent-oci diff RUN_ID [--json]`: the run's proven change as a unified
// diff against the seed snapshot it was proven on (apply_run.h), whatever
// form the patch came in. To a pipe or file it is the diff's exact bytes
// (`git apply` and `patch -p1` take it); to a terminal every control
// character is shown escaped, since the seed's own lines are in it.
// Exit 0: printed; 1: the stored diff no longer matches its hash; 2: unknown
// run or one with no proven change.
#include <unistd.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "pipeline/apply_run.h"
#include "util/terminal_text.h"
#include "contract/unified_diff.h"

namespace lazyagent {

using nlohmann::json;

int cmd_diff(const std::vector<std::string>& args) {
  std::string run_id;
  bool as_json = false;
  ArgParser p("diff", "RUN_ID [--json]",
              "Prints the change a run proved as a unified diff against the seed snapshot it was proven on,\n"
              "whatever form the patch came in (whole files or a diff). The diff is checked against the hash\n"
              "in the run record first. Redirected to a file it is exact: `git apply` or `patch -p1` in the\n"
              "seed applies it (or use `lazyagent-oci apply`). Exit 0: printed; 1: the stored diff was\n"
              "changed after the run; 2: unknown run, or a run with no proven change.");
  p.positional("RUN_ID", &run_id, true, "the run's id (the result's run_id)");
  p.flag("--json", &as_json, "print {run_id, patch_format, diff_stats, diff_sha256, diff} as one JSON object");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto proven = load_proven_change(default_run_store(), run_id);
  if (!proven) {
    return report_refusal(proven.error(), as_json);
  }
  const json& rec = proven->record;
  if (as_json) {
    const DiffStats s = diff_stats(read_unified_diff(proven->diff).diff);
    json out = {{"run_id", run_id},
                {"patch_format", rec.value("patch_format", "files")},
                {"diff_stats", {{"files", s.files}, {"added", s.added}, {"removed", s.removed}, {"hunks", s.hunks}}},
                {"diff_sha256", rec.value("diff_sha256", "")},
                {"rebuilt", proven->rebuilt},
                {"status", rec.value("status", "")},
                {"tests_passed", rec.value("tests_passed", false)},
                {"diff", to_valid_utf8(proven->diff)}};
    std::cout << out.dump(2) << std::endl;
    return kExitPassed;
  }
  if (proven->rebuilt) {
    std::cerr << "lazyagent-oci: run " << escape_for_terminal(run_id)
              << " was recorded before proven diffs were stored; rebuilt from its patch and the seed\n";
  }
  if (::isatty(STDOUT_FILENO)) {
    std::cout << escape_for_terminal(proven->diff);
  } else {
    std::cout.write(proven->diff.data(), static_cast<std::streamsize>(proven->diff.size()));
  }
  std::cout.flush();
  return kExitPassed;
}

}  // namespace lazyagent
