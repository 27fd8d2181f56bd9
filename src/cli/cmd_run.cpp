// `lazyagent-oci run [INSTRUCTION]`: the main job.
#include <iostream>

#include "pipeline/agent_run.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/event_stream.h"
#include "cli/run_command.h"
#include "engine/engine.h"
#include "engine/warm_pool.h"
#include "contract/planner_task.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

ArgParser run_command_parser(RunOptions* opt) {
  ArgParser p("run", "[INSTRUCTION] [--seed DIR] [--allow PATH]... [--test-command CMD] [--timeout S] [--attempts N]\n"
              "           [--max-tokens T] [--rerun K] [--no-baseline] [--report junit:PATH] [--config FILE] [--runtime runc|crun|runsc]\n"
              "           [--accept-weaker-policy] [--sign-key FILE] [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--events jsonl]\n"
              "           [--events-fd N] [--json]",
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
  p.positional("INSTRUCTION", &opt->instruction, false,
               std::string("what to do (default: \"") + kDefaultInstruction + "\")");
  add_project_options(p, &opt->project);
  p.integer("--timeout", &opt->timeout, "S", "host-side sandbox deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.integer("--attempts", &opt->attempts, "N", "planner + sandbox rounds, stopping at the first pass (default: the config's repair.attempts, 1)", 1, 20);
  p.integer("--max-tokens", &opt->max_tokens, "T", "stop the loop once the provider used T tokens in all (0 = no ceiling)", 0, 1L << 40);
  p.integer("--rerun", &opt->rerun, "K", "re-run a failing verdict up to K times to tell flaky tests", 0, 10);
  p.flag("--no-baseline", &opt->no_baseline, "skip the unpatched baseline run and the per-test triage");
  p.option("--report", &opt->report, "junit:PATH", "also write the last attempt's per-test results as JUnit XML to PATH");
  p.option("--runtime", &opt->runtime, "RUNTIME", "the sandbox's runtime: runc, crun or runsc (gVisor; the planner stays on the podman service's own); default: the config's engine.runtime, else the service's runc or crun");
  p.choices("--runtime", {"runc", "crun", "runsc"});
  p.flag("--accept-weaker-policy", &opt->accept_weaker, "run even if the runtime cannot enforce a limit the config sets");
  add_sign_key_option(p, &opt->sign_key);
  add_backend_options(p, &opt->backend);
  return p;
}

Result<PreparedRun> prepare_run(const RunOptions& opt, const RunStore& store) {
  auto config = project_config(opt.project, "run");
  if (!config) return config.error();
  PreparedRun r;
  RunRequest& req = r.req;
  req.config = *config;
  req.instruction = opt.instruction;
  if (auto st = apply_runtime_options(opt.runtime, opt.accept_weaker, &req.config); !st) return st.error();
  auto signer = signing_key_for(opt.sign_key, req.config);
  if (!signer) return signer.error().context("run");
  req.signer = std::move(*signer);
  req.timeout_seconds = opt.timeout ? opt.timeout : req.config.timeouts.test_seconds;
  req.attempts = static_cast<int>(opt.attempts ? opt.attempts : req.config.repair.attempts);
  req.max_tokens = opt.max_tokens >= 0 ? opt.max_tokens : req.config.repair.max_tokens;
  req.judge.rerun = static_cast<int>(opt.rerun >= 0 ? opt.rerun : req.config.repair.rerun);
  req.judge.baseline = !opt.no_baseline;
  // The user's input, refused before anything runs: no record, no container.
  if (auto st = check_seed_dir(req.config.seed); !st) return st.error().context("run");
  if (auto st = use_environment(&req.config, opt.backend); !st) return st.error();
  auto factory = engine_factory(opt.backend, req.config, store);
  if (!factory) return factory.error();
  r.factory = std::move(*factory);
  return r;
}

int cmd_run(const std::vector<std::string>& args) {
  RunOptions opt;
  ArgParser p = run_command_parser(&opt);
  const StreamedCommand start = start_streamed_command(p, args, "run");
  if (start.done) return *start.done;
  if (auto st = check_report_option("run", opt.report); !st) return start.fail(st.error());
  const RunStore store = default_run_store();
  auto prepared = prepare_run(opt, store);
  if (!prepared) return start.fail(prepared.error());
  RunRequest& req = prepared->req;
  const auto engine = prepared->factory();
  // engine.warm: the sandbox is removed after the result is printed (after_result).
  if (WarmPool* pool = engine->warm_pool(); pool != nullptr && req.config.engine.warm > 0) pool->defer_removals();
  const ProgressFn progress = start.progress(&req.events);
  auto result = run_agent(req, *engine, store, progress);
  if (start.events) start.events->finish(result);
  if (result && !opt.report.empty()) write_report("run", opt.report, *result);
  const int code = finish_result(result, start.json, "its planner and sandbox containers were removed");
  after_result(req.config, req.timeout_seconds, prepared->factory, *engine);
  return code;
}

}  // namespace lazyagent
