// `lazyagent-oci eval TASKS.jsonl`: many tasks, concurrently, resumable.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/event_stream.h"
#include "eval/eval_progress.h"
#include "engine/engine.h"
#include "eval/eval_runner.h"
#include "eval/eval_summary.h"
#include "eval/eval_tasks.h"
#include "util/interrupt.h"
#include "policy/runtime_policy.h"
#include "store/run_store.h"
#include "eval/swe_bench.h"
#include "eval/swebench_report.h"
#include "report/report_file.h"
#include "contract/seed_snapshot.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

struct EvalCliOptions {
  std::string tasks;
  std::string predictions, seed_map;
  std::string out;
  long jobs = 2;
  long prepare = -1;
  long rerun = 0;
  long timeout = 0;
  std::string config;
  std::string report;  // swebench:PATH or html:PATH
  bool json = false;
  bool no_baseline = false;
  bool accept_weaker = false;
  std::string sign_key;
  BackendOptions backend;
  EventOptions events;
};

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// tasks.jsonl -> tasks.eval (next to the task file)
std::string default_out(const std::string& tasks) {
  std::string base = tasks;
  const auto slash = base.rfind('/');
  const auto dot = base.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1)) base.resize(dot);
  return base + ".eval";
}

Result<ParsedTasks> load_tasks(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return usage_error("eval: cannot open the task file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  ParsedTasks parsed = parse_task_lines(ss.str());
  resolve_task_files(&parsed, dir_of(path));  // adds unreadable patch files to the errors
  return parsed;
}

std::string slurp_file(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  *ok = static_cast<bool>(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<ParsedTasks> load_predictions(const std::string& predictions, const std::string& seed_map) {
  bool ok = false;
  const std::string p = slurp_file(predictions, &ok);
  if (!ok) return usage_error("eval: cannot open the predictions file " + predictions);
  const std::string m = slurp_file(seed_map, &ok);
  if (!ok) return usage_error("eval: cannot open the seed map " + seed_map);
  return parse_swe_bench_predictions(p, m, dir_of(seed_map));
}

// `--report swebench:PATH`: every task's result file (resumed ones too) as
// one SWE-bench-style report (swebench_report.h), written atomically.
Status write_swebench_report(const std::string& path, const std::string& out_dir,
                             const std::vector<std::string>& ids) {
  std::map<std::string, nlohmann::json> results;
  for (const auto& id : ids) {
    bool ok = false;
    const std::string text = slurp_file(eval_result_path(out_dir, id), &ok);
    if (!ok) continue;  // not run (interrupted): an incomplete instance
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded()) results[id] = std::move(j);
  }
  return write_file_atomic(path, swebench_report(ids, results).dump(2) + "\n");
}

int refuse_task_file(const std::string& path, const ParsedTasks& parsed, bool json) {
  std::string message = "eval: " + path + ": " + std::to_string(parsed.errors.size()) +
                        " problem(s); nothing was run:";
  for (const auto& e : parsed.errors) message += "\n  " + describe_task_error(e);
  if (json) {
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& e : parsed.errors) lines.push_back({{"line", e.line}, {"code", e.code}, {"message", e.message}});
    std::cout << nlohmann::json{{"error", to_valid_utf8(message)}, {"error_kind", "usage"},
                                {"exit_code", kExitUsage}, {"line_errors", lines}}
                     .dump(2)
              << std::endl;
  }
  std::cerr << "lazyagent-oci: " << escape_for_terminal(message) << "\n";
  return kExitUsage;
}

}  // namespace

int cmd_eval(const std::vector<std::string>& args) {
  EvalCliOptions opt;
  ArgParser p("eval", "TASKS.jsonl | --predictions FILE --seed-map FILE [--jobs N] [--prepare M] [--out DIR]\n"
              "            [--rerun K] [--no-baseline] [--timeout S] [--backend podman|k8s] [--namespace NS]\n"
              "            [--kubeconfig FILE] [--report swebench:PATH|html:PATH] [--config FILE] [--accept-weaker-policy]\n"
              "            [--sign-key FILE] [--events jsonl] [--events-fd N] [--json]",
              "Runs every task of a JSON Lines file (one {\"id\", \"seed\", \"allow\", \"test_command\",\n"
              "\"image\", \"patch\" | \"diff\" | \"instruction\"} per line), or every prediction of a SWE-bench\n"
              "predictions file (instance_id, model_patch) with --seed-map (instance id -> seed, or\n"
              "{seed, test_command, allow, image}), through the same pipeline as `test` (or\n"
              "`run`, for an instruction), N at a time through one podman service. Writes one result\n"
              "file per task (the JSON of `test --json`) under DIR/results and DIR/summary.json.\n"
              "Rerunning with the same --out skips the tasks already finished. A task file with any\n"
              "bad line is refused whole, every bad line named. Exit: 0 every task has a verdict,\n"
              "5 some infrastructure error, 2 bad task file, 130/143 interrupted.\n"
              "--backend k8s runs each task as Jobs on a Kubernetes cluster (as `run --backend k8s`), N at\n"
              "a time, with the same result files and summary; patch tasks need no provider Secret there.");
  p.positional("TASKS.jsonl", &opt.tasks, false, "the task file");
  p.option("--predictions", &opt.predictions, "FILE", "a SWE-bench predictions file (JSON Lines or a JSON array)");
  p.option("--seed-map", &opt.seed_map, "FILE", "with --predictions: JSON object, instance id -> seed");
  p.integer("--jobs", &opt.jobs, "N", "sandboxes running their tests at once (default 2)", 1, 64);
  p.integer("--prepare", &opt.prepare, "M",
            "sandboxes created and verified (or removed) while N run their tests (default N on podman, 0 on k8s; "
            "0 = no overlap)", 0, 64);
  p.option("--out", &opt.out, "DIR", "where results go (default: TASKS.eval next to the task file)");
  p.integer("--rerun", &opt.rerun, "K", "rerun a failing task up to K times; a pass then is `flaky` (default 0)", 0, 10);
  p.flag("--no-baseline", &opt.no_baseline, "no unpatched baseline run, no per-test triage; the verdict rule stays: a test "
         "runner's report and the exit code must agree (an exit 0 with no report fails)");
  p.integer("--timeout", &opt.timeout, "S", "host-side deadline per sandbox run in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  add_backend_options(p, &opt.backend);
  p.option("--report", &opt.report, "swebench:PATH|html:PATH",
           "also write a SWE-bench-style report (FAIL_TO_PASS / PASS_TO_PASS per task from the baseline and "
           "the patched run, resolved or not), or one self-contained HTML page (`lazyagent-oci report --help`), "
           "at PATH; covers resumed tasks too");
  p.option("--config", &opt.config, "FILE", kConfigOptionHelp);
  p.flag("--accept-weaker-policy", &opt.accept_weaker,
         "run even if this host's podman cannot enforce a limit the config sets (as for `test`); without it such "
         "an eval is refused before any task runs");
  add_sign_key_option(p, &opt.sign_key);
  add_event_options(p, &opt.events);
  p.flag("--json", &opt.json, "print exactly one JSON object (the summary) on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto stream = EventStream::open(opt.events, "eval");
  if (!stream) return report_error(stream.error(), opt.json);
  const std::shared_ptr<EventStream> events = *stream;
  auto fail = [&](const Error& e) {
    if (events) events->finish_error(e);
    return report_error(e, opt.json);
  };
  if (opt.tasks.empty() == opt.predictions.empty()) {
    return fail(usage_error("eval: give a task file or --predictions FILE (with --seed-map), one of them"));
  }
  if (opt.predictions.empty() != opt.seed_map.empty()) {
    return fail(usage_error("eval: --predictions and --seed-map go together"));
  }
  if (auto st = check_backend_options(opt.backend); !st) return fail(st.error().context("eval"));
  const bool html_report = opt.report.rfind("html:", 0) == 0 && opt.report.size() > 5;
  if (!opt.report.empty() && !html_report && (opt.report.rfind("swebench:", 0) != 0 || opt.report.size() == 9)) {
    return fail(usage_error("eval: --report: expected swebench:PATH or html:PATH, got '" + opt.report + "'"));
  }

  auto config = load_config_or_default(opt.config);
  if (!config) return fail(config.error());
  if (opt.accept_weaker) config->engine.accept_weaker_policy = true;
  if (config->engine.runtime == kRuntimeRunsc) {
    // One podman service runs every task; gVisor's is another (runtime_engine.h).
    // (Kubernetes takes its runtime from k8s.runtime_class.)
    return fail(usage_error("eval: the config's engine.runtime is '" + config->engine.runtime +
                            "'; eval runs its sandboxes on the podman service's own runtime, runc or crun, only "
                            "(use `test`/`run --runtime runsc` for gVisor, or drop engine.runtime)"));
  }
  auto signer = signing_key_for(opt.sign_key, *config);
  if (!signer) return fail(signer.error().context("eval"));
  auto parsed = opt.tasks.empty() ? load_predictions(opt.predictions, opt.seed_map) : load_tasks(opt.tasks);
  if (!parsed) return fail(parsed.error());
  // Every seed is read before anything runs (once per path; the resume keys
  // need its hash anyway): a seed that is missing, unreadable or refused by
  // the snapshot (a special file) is the user's input, refused with the task
  // file, never an infrastructure failure to retry. A task without its own
  // seed uses the config's (its problem is reported as line 0).
  std::map<std::string, std::string> seed_hashes;
  std::map<std::string, std::string> seed_problems;
  std::size_t on_config_seed = 0;
  auto read_seed = [&](const std::string& path) -> const std::string* {
    if (seed_hashes.count(path)) return nullptr;
    if (auto p = seed_problems.find(path); p != seed_problems.end()) return &p->second;
    if (auto st = check_seed_dir(path); !st) {
      return &(seed_problems[path] = escape_for_terminal(to_valid_utf8(st.error().message)));
    }
    auto snap = snapshot_seed_source(path, config->seed_options);  // as the runs will read it
    if (snap) {
      seed_hashes[path] = snap->sha256;
      return nullptr;
    }
    return &(seed_problems[path] = escape_for_terminal(to_valid_utf8(snap.error().message)));
  };
  std::set<std::string> reported;  // check_seed_dir's line errors (resolve_task_files) already name these
  for (const auto& e : parsed->errors) {
    if (e.code == task_reason::kUnreadableSeed) reported.insert(std::to_string(e.line));
  }
  for (const auto& t : parsed->tasks) {
    if (t.seed.empty()) {
      if (config->seed.empty()) {
        parsed->errors.push_back({t.line, task_reason::kUnreadableSeed,
                                  "task " + t.id + " has no seed and the config names none"});
      }
      ++on_config_seed;
      continue;
    }
    if (reported.count(std::to_string(t.line))) continue;
    if (const std::string* problem = read_seed(t.seed)) {
      parsed->errors.push_back({t.line, task_reason::kUnreadableSeed, *problem});
    }
  }
  if (on_config_seed > 0 && !config->seed.empty()) {
    if (const std::string* problem = read_seed(config->seed)) {
      parsed->errors.insert(parsed->errors.begin(),
                            {0, task_reason::kUnreadableSeed,
                             *problem + " (the config's seed, used by " + std::to_string(on_config_seed) +
                                 " task(s) without their own)"});
    }
  }
  std::stable_sort(parsed->errors.begin(), parsed->errors.end(),
                   [](const TaskLineError& a, const TaskLineError& b) { return a.line < b.line; });
  if (!parsed->ok()) {
    if (events) events->finish_error(usage_error("eval: the task file has " + std::to_string(parsed->errors.size()) + " problem(s); nothing was run"));
    return refuse_task_file(opt.tasks.empty() ? opt.predictions : opt.tasks, *parsed, opt.json);
  }
  // A key inside any task's seed would be copied into that task's sandbox.
  if (*signer) {
    const std::string key_path = opt.sign_key.empty() ? config->signing.key : opt.sign_key;
    for (const auto& [seed, hash] : seed_hashes) {
      if (auto st = key_outside_seed(key_path, seed, opt.sign_key.empty() ? "signing.key" : "--sign-key"); !st) {
        return fail(st.error().context("eval"));
      }
    }
  }
  // The config's environment (relative to the config's seed), built once for every task.
  if (auto st = use_environment(&*config, opt.backend); !st) return fail(st.error().context("eval"));

  const RunStore store = default_run_store();
  // Eval's waits poll less often than a single `test` (5 ms): at 5 ms each
  // waiting sandbox cost the podman service ~5% of a core in polling; 20 ms
  // costs a quarter of that, for ~8 ms more latency on a run of hundreds.
  opt.backend.podman_wait_interval = "20ms";
  auto factory = engine_factory(opt.backend, *config, store);
  if (!factory) return fail(factory.error().context("eval"));
  // What this host's engine cannot enforce (a rootless podman on cgroup v1:
  // memory, pids, cpu) refuses the whole eval here, exit 2, before any task:
  // never one infra_error per task, retried for nothing.
  const auto first_engine = (*factory)();
  if (auto st = first_engine->check_policy(*config); !st) return fail(st.error().context("eval"));
  const EnginePlacement placement = first_engine->placement();

  EvalOptions eo;
  eo.config = *config;
  eo.timeout_seconds = opt.timeout ? opt.timeout : config->timeouts.test_seconds;
  eo.jobs = static_cast<int>(opt.jobs);
  // Where a cluster schedules the pods, by default no extra threads prepare ahead.
  eo.prepare = static_cast<int>(opt.prepare >= 0 ? opt.prepare : placement.prepare_ahead ? opt.jobs : 0);
  eo.attempts.reruns = static_cast<int>(opt.rerun);
  eo.baseline = !opt.no_baseline;
  eo.out_dir = opt.out.empty() ? default_out(opt.tasks.empty() ? opt.predictions : opt.tasks) : opt.out;
  eo.seed_sha256 = std::move(seed_hashes);
  eo.signer = *signer;
  eo.backend = opt.backend.backend;
  eo.placement = placement.settings;
  eo.open_engine = [&factory] { return Result<std::unique_ptr<Engine>>((*factory)()); };
  eo.engine_wait_seconds = config->eval.engine_wait_seconds;

  progress_line("eval: " + std::to_string(parsed->tasks.size()) + " task(s), " + std::to_string(eo.jobs) +
                " job(s), " + (placement.where.empty() ? std::string() : placement.where + ", ") +
                "results in " + eo.out_dir);
  EvalProgress progress(std::cerr, isatty(STDERR_FILENO) == 1, parsed->tasks.size());
  progress.start();
  if (events) eo.events = [events](const RunEvent& e) { events->run_event(e); };
  auto report = run_eval(parsed->tasks, eo, store, [&](const EvalEvent& e) {
    progress.on_event(e);
    if (!events) return;
    if (e.kind == EvalEvent::Kind::kOutage) {
      static const char* const kNames[] = {"engine_unreachable", "engine_back", "engine_wait_expired"};
      nlohmann::json f = {{"text", outage_line(e.outage)}, {"since", clock_time(e.outage.outage.began)},
                          {"wait_seconds", e.outage.wait_seconds}};
      if (e.outage.kind != OutageEvent::Kind::kUnreachable) f["ms"] = e.outage.outage.ms;
      if (!e.outage.error.empty()) f["error"] = to_valid_utf8(e.outage.error);
      events->emit(kNames[static_cast<int>(e.outage.kind)], f);
    } else if (e.kind == EvalEvent::Kind::kStarted) {
      events->emit("task_start", {{"task", e.row.id}});
    } else {
      events->emit("task_end", {{"task", e.row.id}, {"category", category_name(e.row.category)},
                                {"skipped", e.kind == EvalEvent::Kind::kSkipped}, {"ms", e.row.ms}});
    }
  });
  progress.finish();
  if (!report) return fail(report.error());

  std::vector<std::string> ids;
  for (const auto& t : parsed->tasks) ids.push_back(t.id);
  EvalSummary summary = summarize(ids, report->rows);
  summary.interrupted = report->interrupted;
  summary.jobs = eo.jobs;
  summary.wall_ms = report->wall_ms;
  summary.engine_outages = report->outages;
  nlohmann::json j = summary_to_json(summary);
  j["out"] = eo.out_dir;
  if (auto st = write_file_atomic(eo.out_dir + "/summary.json", j.dump(2) + "\n"); !st) {
    return fail(st.error().context("writing the summary"));
  }
  if (html_report) {
    const std::string path = opt.report.substr(5);
    auto written = write_html_report(eo.out_dir, path, store);
    if (!written) return fail(written.error().context("eval: --report"));
    progress_line("eval: HTML report: " + path + " (" + std::to_string(written->bytes) + " bytes)");
  } else if (!opt.report.empty()) {
    const std::string path = opt.report.substr(9);
    if (auto st = write_swebench_report(path, eo.out_dir, ids); !st) {
      return fail(st.error().context("eval: --report: writing " + path));
    }
    progress_line("eval: SWE-bench report: " + path);
  }
  if (events) events->emit("summary", {{"summary", j}, {"exit_code", summary.interrupted ? 128 + interrupted_signal() : eval_exit_code(summary)}});
  if (opt.json) {
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << summary_table(summary) << "results: " << eo.out_dir << "/results/<task-id>.json, summary: "
              << eo.out_dir << "/summary.json\n";
  }
  if (report->gave_up) {
    std::cerr << "lazyagent-oci: eval stopped: the engine stayed unreachable for more than "
              << eo.engine_wait_seconds << " s (eval.engine_wait_seconds); " << summary.not_run.size()
              << " task(s) not run; rerun with the same --out once it answers\n";
  }
  if (summary.interrupted) {
    std::cerr << "lazyagent-oci: eval interrupted by signal " << interrupted_signal() << "; "
              << summary.not_run.size() << " task(s) not run; rerun with the same --out to finish\n";
    return 128 + interrupted_signal();
  }
  return eval_exit_code(summary);
}

}  // namespace lazyagent
