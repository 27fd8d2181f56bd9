// `lazyagent-oci apply RUN_ID [--seed DIR] [--branch NAME] [--force] [--json]`:
// the proven change into the user's work tree (run_apply.h).
// Exit 0: applied; 1: refused (the run did not pass, the tree is not the
// seed it proved, the record no longer matches its provenance, the branch
// exists), every reason named; 2: usage, unknown run; 5: git failed.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "pipeline/run_apply.h"
#include "util/terminal_text.h"

namespace lazyagent {

int cmd_apply(const std::vector<std::string>& args) {
  ApplyRequest req;
  bool as_json = false;
  ArgParser p("apply", "RUN_ID [--seed DIR] [--branch NAME] [--force] [--json]",
              "Writes the change a run proved into your work tree: only a passed run's change, only onto a\n"
              "tree that still matches the seed snapshot the run proved (every file's hash, read with the\n"
              "run's seed settings; otherwise it refuses and names each file that differs), and only while\n"
              "the run record matches its provenance. With --branch NAME (a git work tree) a new branch is\n"
              "created first and the changed files are committed on it, the message naming the run id, its\n"
              "verdict and the patch hash. Exit 0: applied; 1: refused (the reason named); 2: usage or\n"
              "unknown run; 5: git failed.");
  p.positional("RUN_ID", &req.run_id, true, "the run's id (the result's run_id)");
  p.option("--seed", &req.seed, "DIR", "the work tree to change (default: the seed the run used)");
  p.option("--branch", &req.branch, "NAME", "create this git branch and commit the change on it");
  p.flag("--force", &req.force, "apply the change of a run whose tests did not pass");
  p.flag("--json", &as_json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto out = apply_proven_change(default_run_store(), req);
  if (!out) {
    return report_refusal(out.error(), as_json);
  }
  if (as_json) {
    nlohmann::json j = {{"run_id", req.run_id}, {"seed", out->seed}, {"applied", out->applied}};
    if (!out->branch.empty()) {
      j["branch"] = out->branch;
      j["commit"] = out->commit;
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return kExitPassed;
  }
  std::cout << "run " << escape_for_terminal(req.run_id) << ": applied to " << escape_for_terminal(out->seed) << "\n";
  for (const auto& path : out->applied) std::cout << "  " << escape_for_terminal(path) << "\n";
  if (out->applied.empty()) std::cout << "  (the change is empty)\n";
  if (!out->branch.empty()) {
    std::cout << "branch " << escape_for_terminal(out->branch) << ", commit " << out->commit << "\n";
  }
  return kExitPassed;
}

}  // namespace lazyagent
