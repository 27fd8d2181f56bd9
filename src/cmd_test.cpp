// `lazyagent-oci test`: prove a given patch against a seed project.
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "cli_args.h"
#include "podman_client.h"
#include "sandbox_run.h"
#include "seed_snapshot.h"
#include "terminal_text.h"
#include "triage_run.h"

namespace lazyagent {

namespace {


struct TestOptions {
  std::string seed;
  std::string patch;
  std::vector<std::string> allow;
  std::string test_command;
  long timeout = 0;
  std::string config;
  std::string runtime;
  bool accept_weaker = false;
  bool json = false;
  long rerun = -1;
  bool no_baseline = false;
};

void print_list(std::ostream& o, const char* what, const nlohmann::json& list) {
  if (!list.is_array() || list.empty()) return;
  o << "  " << what << ":";
  for (const auto& x : list) o << " " << escape_for_terminal(x.get<std::string>());
  o << "\n";
}

void print_triage(std::ostream& o, const nlohmann::json& t) {
  if (!t.is_object()) return;
  o << "verdict: " << t.value("verdict", "") << " (" << t["runs"].size() << " run(s))\n";
  if (t["baseline"] == "off") {
    // --no-baseline: there is no second side to compare with.
    o << "  per-test triage: off (--no-baseline: the seed's tests were not run unpatched)\n";
  } else if (t["baseline"].is_object() && t["baseline"].contains("error")) {
    o << "  baseline: " << escape_for_terminal(t["baseline"].value("error", "")) << "\n";
  } else if (!t.value("available", false)) {
    o << "  per-test triage: not available (no unittest -v or pytest report on both sides)\n";
  }
  for (const char* k : {"fixed", "still_failing", "newly_broken", "flaky", "added"}) print_list(o, k, t[k]);
}

void print_human(const TestResult& r) {
  std::ostream& o = std::cout;
  const std::string verdict = r.status == "refused" ? "REFUSED" : r.tests_passed ? "PASSED" : "FAILED";
  o << "run " << r.run_id << ": " << verdict << "\n";
  if (r.planner.is_object()) {
    const auto& u = r.planner["usage"];
    o << "planner task: " << r.planner.value("task_id", "") << " (model " << escape_for_terminal(r.planner.value("model", ""))
      << ", " << (u.is_object() ? u.value("total_tokens", 0L) : 0L) << " tokens)\n";
  }
  if (!r.findings.empty()) {
    for (const auto& f : r.findings) {
      o << "  " << f.code << (f.path.empty() ? "" : " [" + escape_for_terminal(f.path) + "]") << ": "
        << escape_for_terminal(f.message) << "\n";
    }
    return;
  }
  if (!r.tests_passed) o << "reason: " << escape_for_terminal(r.reason) << "\n";
  for (const auto& f : r.suspicious) {
    o << "suspicious: " << f.code << (f.path.empty() ? "" : " [" + escape_for_terminal(f.path) + "]") << ": "
      << escape_for_terminal(f.message) << "\n";
  }
  if (r.repair.is_object()) {
    for (const auto& a : r.repair["attempts"]) {
      o << "attempt " << a.value("attempt", 0) << ": " << a.value("verdict", "") << ", exit "
        << a.value("test_exit_code", -1) << ", " << a.value("tokens", 0L) << " tokens, patch "
        << a.value("patch_sha256", "").substr(0, 12) << ", run " << a.value("run_id", "") << "\n";
    }
    o << "stopped: " << r.repair.value("stop_reason", "") << " (" << r.repair["total_usage"].value("total_tokens", 0L)
      << " tokens in all)\n";
  }
  print_triage(o, r.triage);
  o << "sandbox: " << r.sandbox_id.substr(0, 12) << " (removed)\n";
  o << "image: " << r.image << " " << r.image_digest << "\n";
  o << "changed: ";
  for (std::size_t i = 0; i < r.changed_paths.size(); ++i) o << (i ? ", " : "") << escape_for_terminal(r.changed_paths[i]);
  o << (r.changed_paths.empty() ? "(nothing)\n" : "\n");
  o << "test exit code: " << r.test_exit_code << "\n";
  o << "--- test output" << (r.test_output_truncated ? " (cut)" : "") << " ---\n"
    << escape_for_terminal(r.test_output);
  if (!r.test_output.empty() && r.test_output.back() != '\n') o << "\n";
  o << "---\ntimings (ms):";
  for (const auto& t : r.timings) o << " " << t.step << "=" << t.ms;
  o << "\n";
}

}  // namespace

int cmd_test(const std::vector<std::string>& args) {
  TestOptions opt;
  ArgParser p("test", "--patch FILE [--seed DIR] [--allow PATH]... [--test-command CMD] [--timeout S] [--rerun K]\n"
              "            [--no-baseline] [--config FILE] [--runtime runc|runsc] [--accept-weaker-policy] [--json]",
              "Copies the seed, applies the patch to the private copy, and runs the test command in a\n"
              "sandbox with no network, no secrets, a read-only root and hard resource caps. The\n"
              "container is always removed. The user's seed directory is never modified. The seed's\n"
              "tests also run unpatched (once per seed content, cached) to report per test what the patch\n"
              "fixed and what it broke; infrastructure failures are retried once and never count as\n"
              "test failures.");
  p.option("--patch", &opt.patch, "FILE", "the patch: {\"files\":[{\"path\",\"content\"}]} ('-' = stdin)");
  p.option("--seed", &opt.seed, "DIR", "the project to test (default: the config's seed)");
  p.repeated("--allow", &opt.allow, "PATH", "a path the patch may change (repeat; replaces the config's list)");
  p.option("--test-command", &opt.test_command, "CMD", "the command run in the copy (default: the config's)");
  p.integer("--timeout", &opt.timeout, "S", "host-side deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.integer("--rerun", &opt.rerun, "K", "re-run a failing verdict up to K times to tell flaky tests (default: the config's repair.rerun)", 0, 10);
  p.flag("--no-baseline", &opt.no_baseline, "skip the unpatched baseline run and the per-test triage");
  p.option("--config", &opt.config, "FILE", kConfigOptionHelp);
  p.option("--runtime", &opt.runtime, "RUNTIME", "runc or runsc (gVisor: memory/pids/cpu not enforced); default: the config's engine.runtime");
  p.flag("--accept-weaker-policy", &opt.accept_weaker, "run even if the runtime cannot enforce a limit the config sets");
  p.flag("--json", &opt.json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (opt.patch.empty()) return report_error(usage_error("test: --patch FILE is required"), opt.json);

  auto config = load_config_or_default(opt.config);
  if (!config) return report_error(config.error(), opt.json);
  TestRequest req;
  req.config = *config;
  if (!opt.seed.empty()) req.config.seed = opt.seed;
  if (!opt.allow.empty()) req.config.allow = opt.allow;
  if (!opt.test_command.empty()) req.config.test_command = opt.test_command;
  if (auto st = apply_runtime_options(opt.runtime, opt.accept_weaker, &req.config); !st) {
    return report_error(st.error(), opt.json);
  }
  req.timeout_seconds = opt.timeout ? opt.timeout : req.config.timeouts.test_seconds;
  if (req.config.seed.empty()) return report_error(usage_error("test: no seed: pass --seed DIR or set `seed` in the config"), opt.json);
  // The user's input, refused before anything runs: no record, no container.
  if (auto st = check_seed_dir(req.config.seed); !st) return report_error(st.error().context("test"), opt.json);

  auto patch = read_patch_file(opt.patch);
  if (!patch) return report_error(patch.error(), opt.json);
  req.patch_json = std::move(*patch);

  auto socket = podman_socket_for_runtime(req.config);
  if (!socket) return report_error(socket.error(), opt.json);
  PodmanClient podman(*socket);
  const RunStore store = default_run_store();

  JudgeOptions judge;
  judge.baseline = !opt.no_baseline;
  judge.rerun = static_cast<int>(opt.rerun >= 0 ? opt.rerun : req.config.repair.rerun);
  auto result = run_judged_test(req, judge, podman, store, [](const std::string& step) { progress_line(step); });
  return finish_result(result, opt.json);
}

int finish_result(const Result<TestResult>& result, bool json, const std::string& removed_what) {
  if (!result) return report_error(result.error(), json, removed_what);
  if (json) {
    std::cout << result_to_json(*result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  } else {
    print_human(*result);
  }
  if (result->status == "refused") return kExitRefused;
  return result->tests_passed ? kExitPassed : kExitFailed;
}

}  // namespace lazyagent
