// `lazyagent-oci test`: prove a given patch against a seed project.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "contract/junit_report.h"
#include "engine/engine.h"
#include "pipeline/sandbox_run.h"
#include "contract/seed_snapshot.h"
#include "pipeline/triage_run.h"

namespace lazyagent {

namespace {

struct TestOptions {
  ProjectOptions project;
  std::string patch;
  long timeout = 0;
  std::string runtime;
  bool accept_weaker = false;
  bool json = false;
  long rerun = -1;
  bool no_baseline = false;
  std::string report;
  BackendOptions backend;
};

}  // namespace

int cmd_test(const std::vector<std::string>& args) {
  TestOptions opt;
  ArgParser p("test", "--patch FILE [--seed DIR] [--allow PATH]... [--test-command CMD] [--timeout S] [--rerun K]\n"
              "            [--no-baseline] [--report junit:PATH] [--config FILE] [--runtime runc|runsc] [--accept-weaker-policy]\n"
              "            [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--json]",
              "Copies the seed, applies the patch to the private copy, and runs the test command in a\n"
              "sandbox with no network, no secrets, a read-only root and hard resource caps. The\n"
              "container is always removed. The user's seed directory is never modified. The seed's\n"
              "tests also run unpatched (once per seed content, cached) to report per test what the patch\n"
              "fixed and what it broke; infrastructure failures are retried once and never count as\n"
              "test failures. --backend k8s runs the same steps as Jobs on a Kubernetes cluster.");
  p.option("--patch", &opt.patch, "FILE", "the patch: {\"files\":[{\"path\",\"content\"}]} or a unified diff ('-' = stdin)");
  add_project_options(p, &opt.project);
  p.integer("--timeout", &opt.timeout, "S", "host-side deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.integer("--rerun", &opt.rerun, "K", "re-run a failing verdict up to K times to tell flaky tests (default: the config's repair.rerun)", 0, 10);
  p.flag("--no-baseline", &opt.no_baseline, "skip the unpatched baseline run and the per-test triage");
  p.option("--report", &opt.report, "junit:PATH", "also write the per-test results as JUnit XML to PATH");
  p.option("--runtime", &opt.runtime, "RUNTIME", "runc or runsc (gVisor: memory/pids/cpu not enforced); default: the config's engine.runtime");
  p.flag("--accept-weaker-policy", &opt.accept_weaker, "run even if the runtime cannot enforce a limit the config sets");
  add_backend_options(p, &opt.backend);
  p.flag("--json", &opt.json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (opt.patch.empty()) return report_error(usage_error("test: --patch FILE is required"), opt.json);
  if (auto st = check_report_option("test", opt.report); !st) return report_error(st.error(), opt.json);

  auto config = project_config(opt.project, "test");
  if (!config) return report_error(config.error(), opt.json);
  TestRequest req;
  req.config = *config;
  if (auto st = apply_runtime_options(opt.runtime, opt.accept_weaker, &req.config); !st) {
    return report_error(st.error(), opt.json);
  }
  req.timeout_seconds = opt.timeout ? opt.timeout : req.config.timeouts.test_seconds;
  // The user's input, refused before anything runs: no record, no container.
  if (auto st = check_seed_dir(req.config.seed); !st) return report_error(st.error().context("test"), opt.json);
  if (auto st = use_environment(&req.config, opt.backend); !st) return report_error(st.error(), opt.json);

  auto patch = read_patch_file(opt.patch);
  if (!patch) return report_error(patch.error(), opt.json);
  req.patch_json = std::move(*patch);

  const RunStore store = default_run_store();
  auto factory = engine_factory(opt.backend, req.config, store);
  if (!factory) return report_error(factory.error(), opt.json);
  const auto engine = (*factory)();
  // engine.warm: the sandbox is removed after the result is printed (after_result).
  if (req.config.engine.warm > 0) engine->defer_removals();

  JudgeOptions judge;
  judge.baseline = !opt.no_baseline;
  judge.rerun = static_cast<int>(opt.rerun >= 0 ? opt.rerun : req.config.repair.rerun);
  auto result = run_judged_test(req, judge, *engine, store, [](const std::string& step) { progress_line(step); });
  if (result && !opt.report.empty()) write_report("test", opt.report, *result);
  const int code = finish_result(result, opt.json);
  after_result(req.config, req.timeout_seconds, *factory, *engine);
  return code;
}

}  // namespace lazyagent
