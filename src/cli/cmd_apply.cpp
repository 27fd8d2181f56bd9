// `lazyagent-oci apply RUN_ID [--seed DIR] [--branch NAME [--switch]] [--force] [--json]`:
// the proven change into the user's work tree (apply_run.h).
// Exit 0: applied; 1: refused (the run did not pass, the tree is not the
// seed it proved, the record no longer matches its provenance, the branch
// exists), every reason named; 2: usage, unknown run; 5: git failed.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "pipeline/apply_run.h"
#include "util/terminal_text.h"

namespace lazyagent {

int cmd_apply(const std::vector<std::string>& args) {
  ApplyRequest req;
  bool as_json = false;
  ArgParser p("apply", "RUN_ID [--seed DIR] [--branch NAME] [--switch] [--force] [--json]",
              "Writes the change a run proved into your work tree: only a passed run's change, only onto a\n"
              "tree that still matches the seed snapshot the run proved (every file's hash, read with the\n"
              "run's seed settings; otherwise it refuses and names each file that differs), and only while\n"
              "the run record matches its provenance. With --branch NAME (a git work tree) it is committed\n"
              "instead on a new branch made as `git branch NAME` makes one: beside your checkout, which\n"
              "stays as it was (`git switch NAME` takes the change); with --switch too, the branch is\n"
              "created and switched to, the files written and committed there. The message names the run\n"
              "id, its verdict and the patch hash. Exit 0: applied; 1: refused (the reason named); 2: usage\n"
              "or unknown run; 5: git failed.");
  p.positional("RUN_ID", &req.run_id, true, "the run's id (the result's run_id)");
  p.option("--seed", &req.seed, "DIR", "the work tree to change (default: the seed the run used)");
  p.option("--branch", &req.branch, "NAME", "commit the change on this new git branch; your checkout is left as it is");
  p.flag("--switch", &req.switch_branch, "with --branch: switch to the new branch and write the change there");
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
      j["switched"] = out->switched;
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return kExitPassed;
  }
  const bool beside = !out->branch.empty() && !out->switched;
  std::cout << "run " << escape_for_terminal(req.run_id) << ": "
            << (beside ? "committed on a new branch in " : "applied to ") << escape_for_terminal(out->seed) << "\n";
  for (const auto& path : out->applied) std::cout << "  " << escape_for_terminal(path) << "\n";
  if (out->applied.empty()) std::cout << "  (the change is empty)\n";
  if (!out->branch.empty()) {
    std::cout << "branch " << escape_for_terminal(out->branch) << ", commit " << out->commit << "\n";
  }
  if (beside) {
    std::cout << "your checkout and work tree are unchanged: `git switch " << escape_for_terminal(out->branch)
              << "` takes the change\n";
  }
  return kExitPassed;
}

}  // namespace lazyagent
