// One sandbox run: prove one patch (or, for the baseline, none) against a
// seed in a fresh sandbox of any engine (engine.h). `test` is this plus the
// judging of triage_run.h; `run` puts the planner in front (agent_run.h).
//
// The steps, each timed and announced on the progress callback:
//   validate   the patch against the contract, in its form (patch_format.h:
//              whole files or a unified diff; refusal => no sandbox)
//   snapshot   read the seed as its source says (seed_source.h: a directory or
//              a git work tree; streamed, no symlink following), then resolve
//              the patch against it (change_set.h: a diff is applied here, to
//              the snapshot's files, never to the user's directory) and store
//              the proven change as a unified diff
//   engine     Engine::check: reachable, supported, dead runs' leftovers reaped
//   image      the sandbox image's digest (for the record)
//   copy       Engine::prepare_sandbox: the private copy of seed + change
//   create     Sandbox::create
//   verify     Sandbox::verify: what the engine made, against the policy
//   queue      (eval only) wait for a free run slot (ProofRequest::acquire_run_slot)
//   run        start, wait with the host-side deadline (killed on timeout)
//   logs       bounded output; the isolation probe's block taken off its front
//              and judged: a violation is an Error of kind kIsolation
//   remove     delete everything of the run and confirm it is gone
//   verdict    exit status + the runner's report (verdict.h)
// The Sandbox owns what the engine made: every path out of this function
// (error, timeout, signal) removes it. The run record is written at the
// start, at each state change and at the end (run_result.h).
//
// Seams: the patch is read in `validate` (patch_format.h: a new form plugs in
// there and resolves to the same ChangeSet), the seed in `snapshot`
// (seed_source.h: another source produces the same SeedSnapshot), and the
// image is the config's images.sandbox (an environment can set it).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "attest/signing_key.h"
#include "config.h"
#include "engine/engine.h"
#include "util/result.h"
#include "pipeline/run_events.h"
#include "pipeline/run_result.h"
#include "store/run_store.h"

namespace lazyagent {

struct ProofRequest {
  Config config;                 // effective config (CLI flags already applied)
  std::string patch_json;        // the patch text, untrusted
  std::int64_t timeout_seconds = 120;
  std::string run_id;            // "" = generate
  nlohmann::json planner;        // set by `run`: the planner task's record
  bool baseline = false;         // run the seed unpatched (patch_json unused): triage_run.h
  // Optional (`eval`, eval_runner.h): called before the sandbox starts, as
  // its own timed step "queue" (it may block until a run slot is free; an
  // error, e.g. interrupted, ends the run), and once after the sandbox has
  // exited or been killed. Other runs' create/verify/remove steps overlap.
  std::function<Status()> acquire_run_slot;
  std::function<void()> release_run_slot;
  // `eval` and `run` check the engine (and reap crashed runs) once; their
  // sandbox runs then skip the "engine" step.
  bool engine_checked = false;
  // Optional: each step's start and end and the test's output lines as they
  // arrive (run_events.h); copies of the request (baseline, re-runs) keep it.
  RunEventFn events;
  // Optional (--sign-key, signing.key): the key the judged verdict is signed
  // with on the host (attest_run.h); copies (baseline, re-runs) share it and
  // only the deciding verdict is signed. Never serialised, never sent.
  std::shared_ptr<const SigningKey> signer;
};

// Engine failures are Errors (kEngine, kIsolation, ...); a refused patch or
// a failing test is a RunResult.
// Makes warm spares (warm_spares.h) for sandboxes of `config` until `count`
// unclaimed ones are there; returns the names made. The policy, image digest
// and command are the ones a run of `config` with this timeout would use.
Result<std::vector<std::string>> keep_warm(const Config& config, long timeout_seconds, Engine& engine, int count);

Result<RunResult> prove(const ProofRequest& req, Engine& engine, const RunStore& store,
                            const ProgressFn& progress);

// The record of a result (what prove writes at its end), for callers that
// change the result afterwards (triage, the repair loop); sets r->provenance
// to the record's.
Status write_result_record(const RunStore& store, const Engine& engine, const ProofRequest& req, RunResult* r);

}  // namespace lazyagent
