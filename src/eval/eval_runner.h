// `lazyagent-oci eval`: many tasks, run concurrently on one engine (podman's
// service or a Kubernetes cluster, engine.h).
//
// Threads in this one process, `jobs + prepare` of them; each owns its own
// engine (its own connection, kept open from task to task) and takes the
// next task from a shared counter. Each task is the ordinary pipeline
// (`test`'s, triage_run.h, or `run`'s, agent_run.h) with every isolation and
// verification step, attempted as eval_attempts.h decides.
// At most `jobs` sandboxes run their tests at once (run slots); the other
// threads meanwhile create and verify the next sandboxes and remove finished
// ones, so the slots never wait for that work (the pipeline's "queue" step is
// the wait for a slot). A planner task holds a slot for its whole run.
//
// On-disk layout under --out DIR:
//   results/<task-id>.json  one per finished task: the JSON `test --json` /
//                           `run --json` prints (or its error object), plus
//                           `task_id` and `eval` {category, attempts,
//                           task_sha256, key, changed, line, ms}. Written
//                           atomically (temp, fsync, rename) only once the
//                           task has its category, so a crash mid-task leaves
//                           no file and the task runs again.
//   summary.json            the last run's summary (eval_summary.h)
// Resuming (eval_resume.h): before anything runs, each task's resume key is
// computed (the seed snapshot's hash, the patch's, the decisive settings',
// the image digest). A task whose result file holds a verdict (not
// infra_error) under the same key is skipped; a task whose stored key
// differs runs again, and its row names the parts that changed; every
// other task runs.
// SIGINT/SIGTERM: no new task starts; each running pipeline removes its
// container and private copy on the way out (their scope guards); the
// interrupted tasks get no result file.
// An outage of the engine (its service stopped or restarted): no new task
// starts until it answers again, and a task it cut short runs again from the
// start (eval_outage.h); past `engine_wait_seconds` the eval stops and the
// tasks without a verdict are not_run (no result file), as after a signal.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attest/signing_key.h"
#include "config.h"
#include "eval/eval_attempts.h"
#include "eval/eval_outage.h"
#include "eval/eval_resume.h"
#include "eval/eval_summary.h"
#include "eval/eval_tasks.h"
#include "engine/engine.h"
#include "pipeline/run_events.h"
#include "util/result.h"
#include "store/run_store.h"

namespace lazyagent {

struct EvalOptions {
  Config config;                     // the base config; tasks override seed/allow/command/image
  std::int64_t timeout_seconds = 120;
  int jobs = 2;                      // sandboxes running their tests at once
  int prepare = -1;                  // more sandboxes created/verified or removed meanwhile (-1 = jobs)
  AttemptPolicy attempts;
  // Judge each patch against the seed's unpatched tests (triage_run.h): a
  // patch that breaks another test is not a pass. Retries and reruns stay
  // with `attempts` (eval_attempts.h), so the judge does neither.
  bool baseline = true;
  std::string out_dir;
  // Seed snapshot hashes by path, when the caller has read the seeds already
  // (`eval` does, to refuse an unreadable one before anything runs); the
  // resume keys use them instead of reading the seeds again.
  std::map<std::string, std::string> seed_sha256;
  // The engine's name and placement (Engine::placement): part of the resume
  // key's config (eval_resume.h). open_engine makes the engines.
  std::string backend = "podman";
  nlohmann::json placement;
  // One engine per worker thread, each with its own connection; called on
  // the main thread before any worker starts (libcurl's first handle set-up
  // is not thread-safe).
  std::function<Result<std::unique_ptr<Engine>>()> open_engine;
  // Optional: every run's steps and output (run_events.h), each naming its
  // task; called from the worker threads.
  RunEventFn events;
  // Optional (--sign-key, signing.key): every task's verdict is signed on
  // this host (attest_run.h); on Kubernetes too, the key never leaves it.
  std::shared_ptr<const SigningKey> signer;
  // How long an outage of the engine is waited out before the eval stops
  // (config eval.engine_wait_seconds; eval_outage.h).
  std::int64_t engine_wait_seconds = 600;
};

struct EvalEvent {
  enum class Kind { kStarted, kFinished, kSkipped, kOutage };
  Kind kind = Kind::kStarted;
  EvalRow row;  // id only for kStarted; nothing for kOutage
  OutageEvent outage;  // kOutage only
};
// Called from worker threads, one call at a time (the runner serialises them).
using EvalObserver = std::function<void(const EvalEvent&)>;

struct EvalReport {
  std::vector<EvalRow> rows;  // finished and skipped tasks, in no particular order
  bool interrupted = false;
  long wall_ms = 0;
  std::vector<EngineOutageLog> outages;  // what the engine's outages cost, in order
  bool gave_up = false;                  // the last one outlasted engine_wait_seconds
};

std::string eval_result_path(const std::string& out_dir, const std::string& task_id);

// The task's config: the base with the task's seed/allow/command/image.
Config task_config(const Config& base, const EvalTask& task);

// What the result file under out_dir says about a task with this resume key:
// `finished` when it holds a verdict (not infra_error) under the same key;
// else `changed` names the parts whose hashes differ when it held a verdict
// under another key (eval_resume.h), and is empty when there was no file, no
// verdict, or an infra_error (a retry, not a change).
struct ResumeCheck {
  std::optional<EvalRow> finished;
  std::vector<std::string> changed;
};
ResumeCheck check_resume(const std::string& out_dir, const EvalTask& task, const ResumeKey& key);

Result<EvalReport> run_eval(const std::vector<EvalTask>& tasks, const EvalOptions& opt,
                            const RunStore& store, const EvalObserver& observer);

}  // namespace lazyagent
