// `lazyagent-oci run [INSTRUCTION]`: the main job.
#include <iostream>

#include "pipeline/agent_run.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/engine.h"
#include "contract/planner_task.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

int cmd_run(const std::vector<std::string>& args) {
  std::string instruction, runtime;
  ProjectOptions project;
  bool accept_weaker = false;
  long timeout = 0;
  bool json = false;
  long attempts = 0, max_tokens = -1, rerun = -1;
  bool no_baseline = false;
  std::string report;
  BackendOptions backend;
  ArgParser p("run", "[INSTRUCTION] [--seed DIR] [--allow PATH]... [--test-command CMD] [--timeout S] [--attempts N]\n"
              "           [--max-tokens T] [--rerun K] [--no-baseline] [--report junit:PATH] [--config FILE] [--runtime runc|runsc]\n"
              "           [--accept-weaker-policy] [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--json]",
              "Asks the configured OpenAI-compatible model for a fix, in a planner container that alone\n"
              "holds the provider secrets; validates the patch again; proves it in a sandbox with no\n"
              "network and no secrets, which is always removed. The prompt and the seed's source files\n"
              "go to the provider you configured (`lazyagent-oci configure`). With --attempts N, a failing\n"
              "attempt's bounded, escaped test output goes back to the planner for a new patch, proven in\n"
              "a fresh sandbox, until one passes, N attempts were made or --max-tokens were used.\n"
              "--backend k8s runs the planner and the sandboxes as Jobs on a Kubernetes cluster: a planner\n"
              "Job holding the provider Secret (as files; `configure --backend k8s`), sandbox Jobs with no\n"
              "secret, no token, no network (RuntimeClass k8s.runtime_class + a deny-all NetworkPolicy,\n"
              "checked by the isolation probe inside the pod); everything is deleted on every path.");
  p.positional("INSTRUCTION", &instruction, false,
               std::string("what to do (default: \"") + kDefaultInstruction + "\")");
  add_project_options(p, &project);
  p.integer("--timeout", &timeout, "S", "host-side sandbox deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.integer("--attempts", &attempts, "N", "planner + sandbox rounds, stopping at the first pass (default: the config's repair.attempts, 1)", 1, 20);
  p.integer("--max-tokens", &max_tokens, "T", "stop the loop once the provider used T tokens in all (0 = no ceiling)", 0, 1L << 40);
  p.integer("--rerun", &rerun, "K", "re-run a failing verdict up to K times to tell flaky tests", 0, 10);
  p.flag("--no-baseline", &no_baseline, "skip the unpatched baseline run and the per-test triage");
  p.option("--report", &report, "junit:PATH", "also write the last attempt's per-test results as JUnit XML to PATH");
  p.option("--runtime", &runtime, "RUNTIME", "the sandbox's runtime: runc or runsc (gVisor; the planner stays on runc); default: the config's engine.runtime");
  p.flag("--accept-weaker-policy", &accept_weaker, "run even if the runtime cannot enforce a limit the config sets");
  add_backend_options(p, &backend);
  p.flag("--json", &json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (auto st = check_report_option("run", report); !st) return report_error(st.error(), json);
  auto config = project_config(project, "run");
  if (!config) return report_error(config.error(), json);
  RunRequest req;
  req.config = *config;
  req.instruction = instruction;
  if (auto st = apply_runtime_options(runtime, accept_weaker, &req.config); !st) return report_error(st.error(), json);
  req.timeout_seconds = timeout ? timeout : req.config.timeouts.test_seconds;
  req.attempts = static_cast<int>(attempts ? attempts : req.config.repair.attempts);
  req.max_tokens = max_tokens >= 0 ? max_tokens : req.config.repair.max_tokens;
  req.judge.rerun = static_cast<int>(rerun >= 0 ? rerun : req.config.repair.rerun);
  req.judge.baseline = !no_baseline;
  // The user's input, refused before anything runs: no record, no container.
  if (auto st = check_seed_dir(req.config.seed); !st) return report_error(st.error().context("run"), json);
  if (auto st = use_environment(&req.config, backend); !st) return report_error(st.error(), json);

  const RunStore store = default_run_store();
  auto factory = engine_factory(backend, req.config, store);
  if (!factory) return report_error(factory.error(), json);
  const auto engine = (*factory)();
  // engine.warm: the sandbox is removed after the result is printed (after_result).
  if (req.config.engine.warm > 0) engine->defer_removals();
  auto result = run_agent(req, *engine, store, [](const std::string& step) { progress_line(step); });
  if (result && !report.empty()) write_report("run", report, *result);
  const int code = finish_result(result, json, "its planner and sandbox containers were removed");
  after_result(req.config, req.timeout_seconds, *factory, *engine);
  return code;
}

}  // namespace lazyagent
