// `lazyagent-oci test`: prove a given patch against a seed project.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/event_stream.h"
#include "cli/test_command.h"
#include "contract/junit_report.h"
#include "contract/patch_contract.h"
#include "engine/engine.h"
#include "engine/warm_pool.h"
#include "pipeline/sandbox_run.h"
#include "contract/seed_snapshot.h"
#include "pipeline/triage_run.h"

namespace lazyagent {

Result<std::string> check_patch_text_size(std::string text) {
  ContractLimits widest;  // as read_patch_file: the contract judges the configured limits
  widest.max_bytes = kMaxPatchBytesCap;
  widest.max_diff_bytes = kMaxDiffBytesCap;
  const std::size_t max = max_patch_text_bytes(widest);
  if (text.size() > max) {
    return Error{ErrorKind::kPatch, "patch: the text is larger than " + std::to_string(max) +
                                        " bytes, more than any patch may be (patch.max_bytes and "
                                        "patch.max_diff_bytes stop at " + std::to_string(kMaxPatchBytesCap) + ")"};
  }
  return text;
}

ArgParser test_command_parser(TestOptions* opt) {
  ArgParser p("test", "--patch FILE [--seed DIR] [--allow PATH]... [--test-command CMD] [--timeout S] [--rerun K]\n"
              "            [--no-baseline] [--report junit:PATH] [--config FILE] [--runtime runc|crun|runsc] [--accept-weaker-policy]\n"
              "            [--sign-key FILE] [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--events jsonl] [--events-fd N] [--json]",
              "Copies the seed, applies the patch to the private copy, and runs the test command in a\n"
              "sandbox with no network, no secrets, a read-only root and hard resource caps. The\n"
              "container is always removed. The user's seed directory is never modified. The seed's\n"
              "tests also run unpatched (once per seed content, cached) to report per test what the patch\n"
              "fixed and what it broke; infrastructure failures are retried once and never count as\n"
              "test failures. --backend k8s runs the same steps as Jobs on a Kubernetes cluster.");
  p.option("--patch", &opt->patch, "FILE", "the patch: {\"files\":[{\"path\",\"content\"}]} or a unified diff ('-' = stdin)");
  add_project_options(p, &opt->project);
  p.integer("--timeout", &opt->timeout, "S", "host-side deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.integer("--rerun", &opt->rerun, "K", "re-run a failing verdict up to K times to tell flaky tests (default: the config's repair.rerun)", 0, 10);
  p.flag("--no-baseline", &opt->no_baseline, "skip the unpatched baseline run and the per-test triage");
  p.option("--report", &opt->report, "junit:PATH", "also write the per-test results as JUnit XML to PATH");
  p.option("--runtime", &opt->runtime, "RUNTIME", "runc, crun or runsc (gVisor: memory/pids/cpu not enforced); default: the config's engine.runtime, else whichever of runc and crun the podman service runs");
  p.choices("--runtime", {"runc", "crun", "runsc"});
  p.flag("--accept-weaker-policy", &opt->accept_weaker, "run even if the runtime cannot enforce a limit the config sets");
  add_sign_key_option(p, &opt->sign_key);
  add_backend_options(p, &opt->backend);
  return p;
}

Result<PreparedTest> prepare_test(const TestOptions& opt, const RunStore& store,
                                  const std::function<Result<std::string>()>& read_patch) {
  auto config = project_config(opt.project, "test");
  if (!config) return config.error();
  PreparedTest t;
  ProofRequest& req = t.req;
  req.config = *config;
  if (auto st = apply_runtime_options(opt.runtime, opt.accept_weaker, &req.config); !st) return st.error();
  auto signer = signing_key_for(opt.sign_key, req.config);
  if (!signer) return signer.error().context("test");
  req.signer = std::move(*signer);
  req.timeout_seconds = opt.timeout ? opt.timeout : req.config.timeouts.test_seconds;
  // The user's input, refused before anything runs: no record, no container.
  if (auto st = check_seed_dir(req.config.seed); !st) return st.error().context("test");
  if (auto st = use_environment(&req.config, opt.backend); !st) return st.error();

  auto patch = read_patch();
  if (!patch) return patch.error();
  req.patch_json = std::move(*patch);

  auto factory = engine_factory(opt.backend, req.config, store);
  if (!factory) return factory.error();
  t.factory = std::move(*factory);
  t.judge.baseline = !opt.no_baseline;
  t.judge.rerun = static_cast<int>(opt.rerun >= 0 ? opt.rerun : req.config.repair.rerun);
  return t;
}

int cmd_test(const std::vector<std::string>& args) {
  TestOptions opt;
  ArgParser p = test_command_parser(&opt);
  const StreamedCommand start = start_streamed_command(p, args, "test");
  if (start.done) return *start.done;
  if (opt.patch.empty()) return start.fail(usage_error("test: --patch FILE is required"));
  if (auto st = check_report_option("test", opt.report); !st) return start.fail(st.error());

  const RunStore store = default_run_store();
  auto prepared = prepare_test(opt, store, [&]() -> Result<std::string> {
    auto text = read_patch_file(opt.patch);
    if (!text) return text.error().context("test");
    return text;
  });
  if (!prepared) return start.fail(prepared.error());
  ProofRequest& req = prepared->req;
  const auto engine = prepared->factory();
  // engine.warm: the sandbox is removed after the result is printed (after_result).
  if (WarmPool* pool = engine->warm_pool(); pool != nullptr && req.config.engine.warm > 0) pool->defer_removals();

  const ProgressFn progress = start.progress(&req.events);
  auto result = prove_judged(req, prepared->judge, *engine, store, progress);
  if (start.events) start.events->finish(result);
  if (result && !opt.report.empty()) write_report("test", opt.report, *result);
  const int code = finish_result(result, start.json);
  after_result(req.config, req.timeout_seconds, prepared->factory, *engine);
  return code;
}

}  // namespace lazyagent
