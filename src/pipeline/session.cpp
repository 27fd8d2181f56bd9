#include "pipeline/session.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "util/interrupt.h"
#include "contract/seed_snapshot.h"
#include "pipeline/engine_wait.h"
#include "pipeline/session_copy.h"
#include "policy/isolation_probe.h"
#include "policy/sandbox_policy.h"
#include "util/capped_dir.h"
#include "util/elapsed.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::int64_t session_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

// One command's container, from prepare to remove, each step timed. The
// Sandbox removes itself on every path out (engine.h).
//
// A step that meets an outage of the engine (kUnreachable) waits for it
// within the command's timeout (engine_wait.h), then carries on: before the
// container started, from a new container; once it runs, by waiting again
// for the same container (it outlives a restart of podman's service: conmon
// keeps it) and reading its logs. Only a start cut short is not taken up
// again: the command may or may not have begun, and running it twice could
// change the copy twice.
class ExecSteps {
 public:
  ExecSteps(const SessionRecord& rec, const Config& config, const ExecRequest& req, Engine& engine,
            const SessionStore& store, const ProgressFn& progress, EngineWait& wait)
      : rec_(rec), config_(config), req_(req), engine_(engine), store_(store), progress_(progress), wait_(wait) {}

  Result<ExecResult> run(const std::string& exec_id) {
    const auto t0 = std::chrono::steady_clock::now();
    res_.session_id = rec_.id;
    res_.exec_id = exec_id;
    config_.test_command = req_.command;
    policy_ = policy_from_config(config_, req_.timeout_seconds);
    engine_.adapt_policy(&policy_);
    if (auto st = steps(); !st) {
      if (sandbox_) (void)sandbox_->remove();
      // (An outage's error gets its own words from exec_in_session, naming both.)
      const Error& e = st.error();
      return (e.kind == ErrorKind::kUnreachable ? e : e.context("session " + rec_.id + ", command " + exec_id))
          .with_id("sandbox_id", res_.sandbox_id);
    }
    res_.ms = ms_since(t0);
    return res_;
  }

  // Its start was asked for (whether or not the answer came back).
  bool may_have_run() const { return start_asked_; }

 private:
  using Step = Status (ExecSteps::*)();

  Status steps() {
    for (auto [name, fn] : std::initializer_list<std::pair<const char*, Step>>{{"copy", &ExecSteps::prepare},
                                                                               {"create", &ExecSteps::create},
                                                                               {"verify", &ExecSteps::verify},
                                                                               {"run", &ExecSteps::start_and_wait},
                                                                               {"logs", &ExecSteps::logs},
                                                                               {"remove", &ExecSteps::remove}}) {
      if (progress_) progress_(name);
      const auto t = std::chrono::steady_clock::now();
      Status st = (this->*fn)();
      while (!st && st.error().kind == ErrorKind::kUnreachable && !start_cut_) {
        if (auto w = wait_.ride_out(st.error()); !w) {
          st = w;
          break;
        }
        st = again(fn);
      }
      res_.timings.push_back({name, ms_since(t)});
      if (!st) return st;
      if (auto i = check_interrupted(); !i) return i;
    }
    return ok_status();
  }

  Status prepare() {
    SandboxSpec spec;
    spec.run_id = res_.exec_id;
    spec.config = &config_;
    spec.policy = policy_;
    spec.session_copy = store_.work_dir(rec_.id);
    spec.progress = progress_;
    spec.output = req_.output;
    auto sandbox = engine_.prepare_sandbox(spec);
    if (!sandbox) return sandbox.error();
    sandbox_ = std::move(*sandbox);
    return ok_status();
  }

  // A step again once the engine answers after an outage.
  Status again(Step step) {
    if (step == &ExecSteps::create || step == &ExecSteps::verify) {
      // What was made may be half made: a new container (the old one goes
      // now, or with the engine's after_outage when it was made unnamed).
      sandbox_.reset();
      res_.sandbox_id.clear();
      for (Step s : {&ExecSteps::prepare, &ExecSteps::create, &ExecSteps::verify}) {
        if (auto st = (this->*s)(); !st) return st;
        if (s == step) break;
      }
      return ok_status();
    }
    if (step == &ExecSteps::start_and_wait) return wait_for_exit();
    return (this->*step)();
  }

  Status create() {
    if (auto st = sandbox_->create(); !st) return st.error().context("creating the sandbox");
    res_.sandbox_id = sandbox_->id();
    return ok_status();
  }

  Status verify() { return sandbox_->verify(); }

  Status start_and_wait() {
    start_asked_ = true;
    if (auto st = sandbox_->start(); !st) {
      start_cut_ = st.error().kind == ErrorKind::kUnreachable;
      return st;
    }
    started_ = std::chrono::steady_clock::now();
    return wait_for_exit();
  }

  // Until the command exits or its deadline (counted from its start) passes;
  // again after an outage, for what is left of it.
  Status wait_for_exit() {
    const long left_ms = static_cast<long>(req_.timeout_seconds) * 1000 - ms_since(started_);
    auto exit = sandbox_->wait(std::max(left_ms, 1L));
    if (!exit) return exit.error();
    res_.exit_code = exit->exit_code;
    res_.timed_out = exit->timed_out;
    return ok_status();
  }

  // The probe's block is judged as a test run's is; the rest is the output.
  Status logs() {
    auto logs = sandbox_->logs(static_cast<std::size_t>(policy_.log_bytes) + 4096);
    if (!logs) return logs.error();
    const ProbeReport probe = take_probe(to_valid_utf8(logs->combined), &res_.output);
    std::vector<std::string> notes;
    const auto violations = sandbox_->probe_violations(probe, res_.timed_out, &notes);
    if (!violations.empty()) {
      std::string all;
      for (const auto& v : violations) all += (all.empty() ? "" : "; ") + v;
      return Error{ErrorKind::kIsolation, "the isolation probe inside the sandbox found: " + all};
    }
    res_.truncated = logs->truncated || res_.output.find(kOutputCutMarker) != std::string::npos;
    return ok_status();
  }

  Status remove() { return sandbox_->remove(); }

  const SessionRecord& rec_;
  Config config_;
  const ExecRequest& req_;
  Engine& engine_;
  const SessionStore& store_;
  const ProgressFn& progress_;
  EngineWait& wait_;
  SandboxPolicy policy_;
  std::unique_ptr<Sandbox> sandbox_;
  std::chrono::steady_clock::time_point started_;
  bool start_asked_ = false;
  bool start_cut_ = false;  // the start met an outage: the command may have begun
  ExecResult res_;
};

// One command of a live session, the session held (exec_in_session).
Result<ExecResult> exec_live(HeldSession& held, const Config& config, const ExecRequest& req, Engine& engine,
                             const SessionStore& store, EngineWait& wait) {
  SessionRecord& rec = held.record;
  const auto t0 = std::chrono::steady_clock::now();
  rec.execs += 1;
  rec.last_used = session_now();
  const std::string exec_id = rec.id + "-" + std::to_string(rec.execs);
  rec.pending_exec = exec_id;
  if (auto st = store.save(rec); !st) return st.error();
  const SandboxPolicy policy = policy_from_config(config, req.timeout_seconds);
  LiveCommand c;
  c.number = rec.execs;
  c.command = req.command;
  c.deadline_ms = static_cast<long>(req.timeout_seconds) * 1000;
  // As a test run's capture (sandbox_policy.h): the last 64 KiB (or half) and the rest from the start.
  c.tail_bytes = static_cast<std::size_t>(policy.log_bytes >= (128 << 10) ? (64 << 10) : policy.log_bytes / 2);
  c.head_bytes = static_cast<std::size_t>(policy.log_bytes) - c.tail_bytes;
  c.output = req.output;
  auto live = engine.live(rec.sandbox);
  bool started = false;
  c.started = &started;
  auto r = live->exec(c);
  // Not handed to the sandbox yet: the outage is waited out within the
  // command's timeout and the command then runs (once it started, it may be
  // running: it is never run twice).
  while (!r && r.error().kind == ErrorKind::kUnreachable && !started) {
    if (auto w = wait.ride_out(r.error()); !w) {
      rec.pending_exec.clear();
      (void)store.save(rec);
      return w.error().context("session " + rec.id + ": command " + exec_id +
                               " not run, podman is unreachable (the session is kept): retry once podman answers");
    }
    live = engine.live(rec.sandbox);
    r = live->exec(c);
  }
  rec.last_used = session_now();
  if (!r && r.error().kind == ErrorKind::kUnreachable) {
    (void)store.save(rec);  // still pending: the next holder ends it
    return r.error().context("session " + rec.id + ": command " + exec_id +
                             " cut short, podman is unreachable (the session is kept; the command may still run): "
                             "retry once podman answers");
  }
  rec.pending_exec.clear();
  if (auto st = store.save(rec); !st && r) return st.error();
  if (!r) return r.error().context("session " + rec.id + ", command " + exec_id);
  ExecResult res;
  res.session_id = rec.id;
  res.exec_id = exec_id;
  res.sandbox_id = rec.sandbox;
  res.exit_code = r->exit_code;
  res.timed_out = r->timed_out;
  res.output = to_valid_utf8(r->output);
  res.truncated = r->truncated;
  res.ms = ms_since(t0);
  res.timings.push_back({"exec", res.ms});
  res.isolation = kIsolationLive;
  res.shell = r->shell;
  res.fresh_shell = r->fresh_shell;
  res.shell_ended = r->shell_ended;
  res.outages = wait.log();
  return res;
}

Status check_engine_supports_sessions(const Engine& engine) {
  if (!engine.placement().on_this_host) {
    return usage_error(std::string("sessions run on the podman backend only (the ") + engine.name() +
                       " engine cannot bind-mount a working copy)");
  }
  return ok_status();
}

}  // namespace

json exec_result_json(const ExecResult& r) {
  json timings = json::object();
  for (const auto& t : r.timings) timings[t.step] = t.ms;
  json outages = json::array();
  for (const auto& o : r.outages) outages.push_back(outage_log_json(o));
  json j{{"session_id", r.session_id}, {"exec_id", r.exec_id},     {"sandbox_id", r.sandbox_id},
         {"exit_code", r.exit_code},   {"timed_out", r.timed_out}, {"output", r.output},
         {"truncated", r.truncated},   {"timings_ms", timings},    {"ms", r.ms},
         {"isolation", r.isolation},   {"engine_outages", outages}};
  if (r.isolation == kIsolationLive) {
    j["shell"] = r.shell;
    j["fresh_shell"] = r.fresh_shell;
    j["shell_ended"] = r.shell_ended;
  }
  return j;
}

FrozenSandbox::~FrozenSandbox() {
  if (!live_) return;
  if (auto st = live_->thaw(); !st) return;  // the record keeps `frozen`: the next holder thaws it
  if (auto rec = store_->load(id_); rec && rec->frozen) {
    rec->frozen = false;
    (void)store_->save(*rec);
  }
}

Result<HeldSession> hold_session(const std::string& id, Engine* engine, const SessionStore& store, HoldFor purpose) {
  if (auto r = store.load(id); !r) return r.error();  // an unknown id says so before any lock file is made
  auto lock = store.lock(id, true);
  if (!lock) return lock.error();
  auto rec = store.load(id);  // fresh, under the lock
  if (!rec) return rec.error();
  if (const std::string why = session_expiry(*rec, session_now()); !why.empty()) {
    return usage_error("session " + id + " has expired (" + why + "): `lazyagent-oci reap` closes it; open another");
  }
  const bool live = rec->isolation == kIsolationLive;
  if (live && (engine == nullptr || !engine->live(rec->sandbox))) {
    return usage_error("session " + id + " is live: its sandbox is reached through the podman engine only");
  }
  if (live && (rec->frozen || !rec->pending_exec.empty())) {
    // A reader died with the sandbox frozen, or a caller mid-command.
    auto box = engine->live(rec->sandbox);
    if (rec->frozen) {
      if (auto st = box->thaw(); !st) return st.error().context("thawing the sandbox of session " + id);
      rec->frozen = false;
    }
    if (!rec->pending_exec.empty()) {
      const std::string& p = rec->pending_exec;
      const std::int64_t n = std::stoll("0" + p.substr(p.rfind('-') + 1));
      if (auto st = box->end_command(n); !st) return st.error().context("ending command " + p + " of session " + id);
      rec->pending_exec.clear();
    }
    if (auto st = store.save(*rec); !st) return st.error();
  }
  if (!live && !rec->pending_exec.empty() && engine != nullptr) {
    // Its process died mid-command: its container (owner dead) goes first;
    // so does one an outage of the service cut short (its owner may be this
    // very process, the MCP server).
    if (auto reaped = engine->reap(false); !reaped) return reaped.error().context("reaping a killed command of session " + id);
    if (auto st = engine->remove_run(rec->pending_exec); !st) {
      return st.error().context("removing command " + rec->pending_exec + " of session " + id);
    }
    rec->pending_exec.clear();
    if (auto st = store.save(*rec); !st) return st.error();
  }
  if (auto st = store.mount_work(*rec); !st) return st.error();  // after a reboot
  HeldSession held{std::move(*lock), std::move(*rec), {}};
  if (live && purpose == HoldFor::kRead && held.record.unfrozen.empty()) {
    // Nothing in the sandbox changes the copy while the host reads it.
    held.record.frozen = true;
    if (auto st = store.save(held.record); !st) return st.error();
    auto box = engine->live(held.record.sandbox);
    if (auto st = box->freeze(); !st) {
      held.record.frozen = false;
      (void)store.save(held.record);
      return st.error().context("freezing the sandbox of session " + id + " for the host's read");
    }
    held.frozen = FrozenSandbox(std::move(box), &store, id);
    held.record.frozen = false;  // this copy is the holder's: the guard clears the stored one
  }
  return held;
}

Result<SessionRecord> open_session(const SessionOpen& open, Engine& engine, const SessionStore& store,
                                   const ProgressFn& progress) {
  if (auto st = check_engine_supports_sessions(engine); !st) return st.error();
  SandboxPolicy policy = policy_from_config(open.config, open.config.timeouts.test_seconds);
  engine.adapt_policy(&policy);
  const bool live_model = open.config.sessions.isolation == kIsolationLive;
  if (auto st = engine.check_policy(open.config); !st) {
    if (!live_model || policy.no_freezer.empty()) return st.error();
    return usage_error(st.error().message + "; and the live session model (sessions.isolation: live) cannot freeze "
                       "its sandbox while the host reads the copy (" + policy.no_freezer + ")");
  }
  if (progress) progress("engine");
  if (auto st = engine.check(progress); !st) return st.error();
  if (progress) progress("snapshot");
  auto seed = snapshot_seed_source(open.config.seed, open.config.seed_options);
  if (!seed) return seed.error().context("reading the seed");
  SessionRecord rec;
  rec.id = new_session_id();
  rec.seed = open.config.seed;
  rec.config = open.config_path;
  rec.allow = open.allow;
  rec.test_command = open.test_command;
  rec.seed_sha256 = seed->sha256;
  rec.created = rec.last_used = session_now();
  rec.idle_ttl_seconds = open.config.sessions.idle_ttl_seconds;
  rec.max_age_seconds = open.config.sessions.max_age_seconds;
  rec.host_id = policy.userns.enabled ? policy.userns.host_id : -1;
  rec.rootless = policy.userns.enabled && policy.userns.rootless;
  rec.accept_weaker_policy = open.config.engine.accept_weaker_policy;
  rec.isolation = open.config.sessions.isolation;
  // The live model freezes its sandbox while the host reads the copy: where
  // the host has no freezer for it (no cgroups: rootless podman on cgroup
  // v1), refused by name unless accepted, and the record says so.
  if (live_model && !policy.no_freezer.empty()) {
    const std::string why = "the host cannot freeze the session's sandbox (" + policy.no_freezer +
                            "): a background process could change the working copy while diff, read or prove reads it";
    if (!open.config.engine.accept_weaker_policy) {
      return usage_error("the live session model (sessions.isolation: live) needs the cgroup freezer, and " + why +
                         ". Refused before any copy or container exists: use sessions.isolation: per-command (nothing "
                         "runs between commands), or accept the weaker policy with --accept-weaker-policy (or "
                         "engine.accept_weaker_policy: true)");
    }
    rec.unfrozen = why;
  }
  // The working copy's cap, or why there is none (refused unless accepted).
  const std::string uncapped = capped_dir_unsupported_reason();
  if (uncapped.empty()) {
    rec.disk_bytes = open.config.sessions.disk_mib * 1024 * 1024;
    rec.max_files = open.config.sessions.max_files;
  } else if (!open.config.engine.accept_weaker_policy) {
    return usage_error("the session's working copy cannot be size-capped (sessions.disk_mib: " +
                       std::to_string(open.config.sessions.disk_mib) + "): " + uncapped +
                       "; a command could fill the run store's disk until its timeout. Refused before any copy or "
                       "container exists: run as root, or accept the weaker policy with --accept-weaker-policy "
                       "(or engine.accept_weaker_policy: true)");
  } else {
    rec.uncapped = uncapped;
  }
  if (rec.disk_bytes > 0 && static_cast<std::int64_t>(seed->bytes) > rec.disk_bytes / 10 * 9) {
    return usage_error("the seed (" + std::to_string(seed->bytes >> 20) + " MiB) leaves less than a tenth of the "
                       "session's working copy cap free (sessions.disk_mib: " + std::to_string(open.config.sessions.disk_mib) +
                       "): raise sessions.disk_mib");
  }
  if (auto st = store.create(rec.id); !st) return st.error();
  auto made = [&]() -> Status {
    // Not "copy": the first command's own steps (copy, create, ...) follow.
    if (progress) progress("working copy");
    if (auto st = write_seed_copy(*seed, {}, store.base_dir(rec.id)); !st) return st;
    if (rec.disk_bytes > 0) {
      if (::mkdir(store.work_dir(rec.id).c_str(), 0700) != 0) return engine_error("creating " + store.work_dir(rec.id));
      const std::int64_t owner = rec.host_id >= 0 ? rec.host_id : 0;
      if (auto st = make_capped_dir(store.work_image(rec.id), store.work_dir(rec.id), rec.disk_bytes, rec.max_files,
                                    owner, owner);
          !st) {
        return st.error().context("making the working copy's capped filesystem");
      }
    }
    if (auto st = write_seed_copy(*seed, {}, store.work_dir(rec.id)); !st) return st;
    // The sandbox's root owns the working copy (it writes there); base/ stays ours.
    if (auto st = give_copy_to_sandbox(rec, store); !st) return st;
    return store.save(rec);
  }();
  if (!made) {
    (void)store.remove(rec.id);
    return made.error().context("opening a session");
  }
  if (rec.isolation == kIsolationLive) {
    // The session's sandbox: verified and probed once, before the agent's first command.
    if (progress) progress("sandbox");
    SandboxSpec spec;
    spec.run_id = rec.id;
    spec.config = &open.config;
    spec.policy = policy;
    spec.session_copy = store.work_dir(rec.id);
    spec.progress = progress;
    // It ends no sooner than the record expires (session_expiry: past
    // max_age whole seconds after `created`), so a command that finds it
    // gone is told the session has expired, and reap removes both.
    const std::int64_t lifetime = rec.created + rec.max_age_seconds + 1 - session_now();
    auto live = engine.open_live(spec, std::max<std::int64_t>(lifetime, 1));
    if (live) {
      rec.sandbox = (*live)->id();
      if (auto st = store.save(rec); !st) {
        (void)(*live)->remove();
        live = st.error();
      }
    }
    if (!live) {
      (void)store.remove(rec.id);
      return live.error().context("opening a session");
    }
    return rec;
  }
  // The first command: the policy verified and probed before the agent's.
  ExecRequest first;
  first.command = "true";
  first.timeout_seconds = 60;
  auto probe = exec_in_session(rec.id, open.config, first, engine, store, progress);
  if (!probe || probe->exit_code != 0) {
    (void)store.remove(rec.id);
    if (!probe) return probe.error().context("opening a session");
    return engine_error("opening a session: `true` exited " + std::to_string(probe->exit_code) + " in the sandbox");
  }
  auto fresh = store.load(rec.id);
  if (!fresh) return fresh.error();
  return *fresh;
}

Result<ExecResult> exec_in_session(const std::string& id, const Config& config, const ExecRequest& req,
                                   Engine& engine, const SessionStore& store, const ProgressFn& progress) {
  if (auto st = check_engine_supports_sessions(engine); !st) return st.error();
  // An outage waited out within the command's timeout, here as in its steps.
  EngineWait wait(engine, req.timeout_seconds, "the command's timeout", req.notes ? req.notes : progress);
  auto held = hold_session(id, &engine, store);
  while (!held && held.error().kind == ErrorKind::kUnreachable) {
    if (auto w = wait.ride_out(held.error()); !w) {
      return w.error().context("session " + id + ": podman is unreachable (the session and its working copy are "
                               "kept; no command ran): retry once podman answers");
    }
    held = hold_session(id, &engine, store);
  }
  if (!held) return held.error();
  SessionRecord& rec = held->record;
  if (rec.isolation == kIsolationLive) return exec_live(*held, config, req, engine, store, wait);
  const std::string exec_id = id + "-" + std::to_string(rec.execs + 1);
  rec.execs += 1;
  rec.last_used = session_now();
  rec.pending_exec = exec_id;
  if (auto st = store.save(rec); !st) return st.error();
  ExecSteps steps(rec, config, req, engine, store, progress, wait);
  auto result = steps.run(exec_id);
  if (result) result->outages = wait.log();
  rec.last_used = session_now();
  if (!result && result.error().kind == ErrorKind::kUnreachable) {
    // The service went away under the command and did not come back within
    // its timeout, or its start was cut short: its container may outlive
    // the restart, still running over the copy. It stays pending, and the
    // next command (or close, or reap) removes it before touching the copy.
    (void)store.save(rec);
    if (!steps.may_have_run()) {
      return result.error().context("session " + id + ": command " + exec_id +
                                    " not run, podman is unreachable (the session and its working copy are kept): "
                                    "retry once podman answers");
    }
    return result.error().context("session " + id + ": command " + exec_id +
                                  " cut short, podman is unreachable (the session and its working copy are kept; "
                                  "the command may have run in part): retry once podman answers");
  }
  // The container is gone (or the error says why not): nothing is in flight.
  rec.pending_exec.clear();
  if (auto st = store.save(rec); !st && result) return st.error();
  if (result) result->isolation = rec.isolation;
  return result;
}

Status close_session(const std::string& id, Engine& engine, const SessionStore& store) {
  auto rec = store.load(id);
  if (!rec) return rec.error();
  auto lock = store.lock(id, true);
  if (!lock) return lock.error();
  // The containers of commands whose results were already printed are
  // removed first (session exec removes them after answering).
  auto removals = store.removals_lock(id, true);
  if (!removals) return removals.error();
  auto fresh = store.load(id);
  if (fresh && fresh->isolation == kIsolationLive && !fresh->sandbox.empty()) {
    // The sandbox (and whatever runs in it) goes before its copy.
    auto box = engine.live(fresh->sandbox);
    if (!box) return usage_error("closing session " + id + ": the " + engine.name() + " engine cannot reach its sandbox");
    if (auto st = box->remove(); !st) return st.error().context("closing session " + id);
  } else if (fresh && !fresh->pending_exec.empty()) {
    if (auto reaped = engine.reap(false); !reaped) return reaped.error().context("closing session " + id);
    if (auto st = engine.remove_run(fresh->pending_exec); !st) return st.error().context("closing session " + id);
  }
  return store.remove(id);
}

std::vector<std::string> reap_sessions(const SessionStore& store, std::int64_t now, std::vector<std::string>* errors,
                                       Engine* engine) {
  std::vector<std::string> closed;
  for (const std::string& id : store.ids()) {
    auto lock = store.lock(id, false);
    if (!lock) continue;  // a command runs in it: not idle
    std::string why, sandbox;
    if (auto rec = store.load(id); rec) {
      why = session_expiry(*rec, now);
      if (rec->isolation == kIsolationLive) sandbox = rec->sandbox;
    } else {
      struct stat st {};
      const std::string dir = store.session_dir(id);
      if (::lstat(dir.c_str(), &st) == 0 && st.st_mtime < now - 60) why = "no record (a crash while it opened)";
    }
    if (why.empty()) continue;
    if (auto box = !sandbox.empty() && engine != nullptr ? engine->live(sandbox) : nullptr) {
      if (auto st = box->remove(); !st) {
        if (errors) errors->push_back(st.error().context("session " + id).message);
        continue;
      }
    }
    if (auto st = store.remove(id); !st) {
      if (errors) errors->push_back(st.error().message);
      continue;
    }
    closed.push_back(id + " (" + why + ")");
  }
  return closed;
}

json sessions_json(const SessionStore& store, std::int64_t now) {
  json out = json::array();
  for (const std::string& id : store.ids()) {
    auto rec = store.load(id);
    if (!rec) continue;
    json j = session_to_json(*rec);
    if (const std::string why = session_expiry(*rec, now); !why.empty()) {
      j["expired"] = why;
    } else {
      std::int64_t left = rec->idle_ttl_seconds - (now - rec->last_used);
      left = std::min(left, rec->max_age_seconds - (now - rec->created));
      j["expires_in"] = left;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace lazyagent
