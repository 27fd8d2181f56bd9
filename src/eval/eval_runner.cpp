#include "eval/eval_runner.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "pipeline/agent_run.h"
#include "util/elapsed.h"
#include "util/interrupt.h"
#include "pipeline/sandbox_run.h"
#include "contract/seed_snapshot.h"
#include "util/terminal_text.h"
#include "pipeline/triage_run.h"

namespace lazyagent {

using nlohmann::json;

namespace {

Status make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return usage_error("creating " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return usage_error(dir + " is not a directory");
  return ok_status();
}

// A task's resume key before it runs (eval_resume.h). Seeds are read and
// images inspected once per distinct path and image, before any task runs.
class ResumeKeys {
 public:
  ResumeKeys(const EvalOptions& opt, Engine* engine) : opt_(opt), engine_(engine) {}

  ResumeKey of(const EvalTask& task) {
    const Config config = task_config(opt_.config, task);
    ResumeKey k;
    k.seed = seed_hash(config.seed);
    k.patch = task_input_sha256(task.patch_json, task.instruction);
    // Tasks differ only in what they override: hash each combination once
    // (building the policy reads the seccomp profile).
    std::string overrides = task.test_command + '\0' + task.image + '\0' + (task.has_allow ? "1" : "0") +
                            (task.is_instruction() ? "i" : "p");
    for (const auto& a : task.allow) overrides += '\0' + a;
    if (auto it = configs_.find(overrides); it != configs_.end()) {
      k.config = it->second;
    } else {
      k.config = configs_[overrides] = config_hash(task, config);
    }
    k.image = image_part(image_id(config.images.sandbox), planner_image(task));
    return k;
  }

 private:
  std::string config_hash(const EvalTask& task, const Config& config) const {
    DecisiveSettings s;
    s.config = config;
    s.timeout_seconds = opt_.timeout_seconds;
    s.baseline = opt_.baseline;
    s.reruns = opt_.attempts.reruns;
    s.instruction = task.is_instruction();
    s.backend = opt_.backend;
    s.placement = opt_.placement;
    return decisive_settings_sha256(s);
  }

 public:
  // The sandbox image's part of the key, plus the planner's for an
  // instruction task.
  static std::string image_part(const std::string& sandbox, const std::string& planner) {
    return planner.empty() ? sandbox : sandbox + " planner=" + planner;
  }
  // An instruction task's planner image id ("" for a patch task).
  std::string planner_image(const EvalTask& task) {
    if (!task.is_instruction()) return "";
    const Config config = task_config(opt_.config, task);
    const std::string& image = config.images.planner;
    if (auto it = planners_.find(image); it != planners_.end()) return it->second;
    auto d = engine_->planner_image_digest(config);
    return planners_[image] = !d ? "missing:" + image : d->empty() ? "ref:" + image : *d;
  }
  // Whether an image id is the engine's digest (podman), not a reference
  // the nodes resolve when they pull (Kubernetes: known after the run).
  static bool is_digest(const std::string& id) { return id.rfind("ref:", 0) != 0 && id.rfind("missing:", 0) != 0; }

 private:
  std::string seed_hash(const std::string& path) {
    if (auto known = opt_.seed_sha256.find(path); known != opt_.seed_sha256.end()) return known->second;
    auto it = seeds_.find(path);
    if (it != seeds_.end()) return it->second;
    auto snap = snapshot_seed_source(path, opt_.config.seed_options);  // as the runs read it
    return seeds_[path] = snap ? snap->sha256 : "unreadable: " + snap.error().message;
  }
  // podman's digest (a rebuilt image under the same tag has a new one); on
  // Kubernetes the nodes pull the image: its reference.
  std::string image_id(const std::string& image) {
    if (auto it = images_.find(image); it != images_.end()) return it->second;
    auto d = engine_->image_digest(image);
    return images_[image] = !d ? "missing:" + image : d->empty() ? "ref:" + image : *d;
  }

  const EvalOptions& opt_;
  Engine* engine_;
  std::map<std::string, std::string> seeds_, images_, planners_, configs_;
};

// The result file: what `test --json` / `run --json` prints for the final
// attempt, plus the eval's own fields.
json result_document(const EvalTask& task, const TaskVerdict& v, long ms, const ResumeKey& key,
                     const std::vector<std::string>& changed) {
  json j;
  if (v.final) {
    j = result_to_json(*v.final);
  } else {
    j = {{"error", to_valid_utf8(v.final.error().message)}, {"error_kind", error_kind_name(v.final.error().kind)}};
    for (const auto& [k, id] : v.final.error().ids) j[k] = id;
  }
  auto logs = [](const std::vector<AttemptLog>& list) {
    json out = json::array();
    for (const auto& a : list) out.push_back({{"outcome", a.outcome}, {"detail", to_valid_utf8(a.detail)}, {"run_id", a.run_id}});
    return out;
  };
  const json attempts = logs(v.attempts);
  j["task_id"] = task.id;
  j["eval"] = {{"category", category_name(v.category)},
               {"attempts", attempts},
               {"task_sha256", task_sha256(task)},
               {"key", resume_key_to_json(key)},
               {"changed", changed},
               // Runs an outage of the engine cut short, run again from the start.
               {"outages", logs(v.outages)},
               {"line", task.line},
               {"ms", ms}};
  return j;
}

// The patch has suspicious findings: flagged, or refused for them (patch.suspicious: refuse).
bool result_has_suspicious(const RunResult& r) {
  if (!r.suspicious.empty()) return true;
  return std::any_of(r.findings.begin(), r.findings.end(),
                     [](const Finding& f) { return f.code.rfind("suspicious_", 0) == 0; });
}

std::string one_line(const std::string& s) {
  std::string out = s.substr(0, s.find('\n'));
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
}

// A counting semaphore whose wait gives up when SIGINT/SIGTERM arrives.
class RunSlots {
 public:
  explicit RunSlots(int n) : free_(n) {}
  Status acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    while (free_ == 0) {
      if (auto st = check_interrupted(); !st) return st;
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
    --free_;
    return ok_status();
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

class Runner {
  // A task to run, with its resume key (eval_resume.h).
  struct Pending {
    const EvalTask* task;
    ResumeKey key;
    std::vector<std::string> changed;  // why it runs again: the key's parts that changed
    std::string planner_image;          // an instruction task's planner image id
  };

 public:
  Runner(const std::vector<EvalTask>& tasks, const EvalOptions& opt, const RunStore& store,
         const EvalObserver& observer)
      : tasks_(tasks), opt_(opt), store_(store), observer_(observer), slots_(std::max(1, opt.jobs)),
        outage_(opt.engine_wait_seconds, [this](const OutageEvent& e) {
          EvalEvent ev;
          ev.kind = EvalEvent::Kind::kOutage;
          ev.outage = e;
          notify(ev);
        }) {}

  Result<EvalReport> run() {
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = make_dir(opt_.out_dir); !st) return st.error();
    if (auto st = make_dir(opt_.out_dir + "/results"); !st) return st.error();
    // One eval at a time per --out: two would run the same tasks twice.
    lock_fd_ = ::open((opt_.out_dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      return usage_error("eval: another eval is using " + opt_.out_dir + " (" + std::strerror(errno) + ")");
    }
    if (auto st = store_.ensure(); !st) return st.error();

    // One engine (one connection) per worker, made here, before any thread
    // starts; the first one also answers the resume keys' image digests.
    std::vector<std::unique_ptr<Engine>> engines;
    auto first = opt_.open_engine();
    if (!first) return first.error();
    engines.push_back(std::move(*first));
    // An engine away as the eval starts (its service restarting) is waited
    // out as one that goes away mid-run, before anything is asked of it:
    // the resume keys need its image digests.
    if (Status st = engines.front()->after_outage(); !st && st.error().kind == ErrorKind::kUnreachable) {
      if (auto w = outage_.ride_out(*engines.front(), st.error()); !w) {
        return w.error().context("eval: nothing was run (eval.engine_wait_seconds " +
                                 std::to_string(opt_.engine_wait_seconds) + "); rerun once the engine answers");
      }
    }
    {
      ResumeKeys keys(opt_, engines.front().get());
      for (const auto& t : tasks_) {
        Pending p{&t, keys.of(t), {}, keys.planner_image(t)};
        ResumeCheck check = check_resume(opt_.out_dir, t, p.key);
        if (check.finished) {
          report_.rows.push_back(*check.finished);
          notify({EvalEvent::Kind::kSkipped, *check.finished, {}});
        } else {
          p.changed = std::move(check.changed);
          pending_.push_back(std::move(p));
        }
      }
    }
    outage_.tasks_begin();
    const int prepare = opt_.prepare < 0 ? opt_.jobs : opt_.prepare;
    const int jobs = std::max(1, std::min<int>(opt_.jobs + prepare, static_cast<int>(pending_.size())));
    if (pending_.empty()) engines.clear();
    for (int i = static_cast<int>(engines.size()); i < jobs && !pending_.empty(); ++i) {
      auto e = opt_.open_engine();
      if (!e) return e.error();
      engines.push_back(std::move(*e));
    }
    // Once per batch instead of once per task: the engine answers, its
    // version is supported, and what crashed runs left is reaped.
    if (!engines.empty()) {
      if (auto st = engines.front()->check(nullptr); !st) return st.error().context("eval");
    }
    std::vector<std::thread> workers;
    for (auto& e : engines) workers.emplace_back([this, engine = e.get()] { work(*engine); });
    for (auto& w : workers) w.join();
    return finish(t0);
  }

 private:
  Result<EvalReport> finish(std::chrono::steady_clock::time_point t0) {
    report_.interrupted = interrupted_signal() != 0;
    report_.wall_ms = ms_since(t0);
    report_.outages = outage_.log();
    report_.gave_up = outage_.gave_up();
    if (!write_error_.empty()) return engine_error(write_error_);
    return report_;
  }

  void work(Engine& engine) {
    for (;;) {
      if (interrupted_signal() != 0) return;
      if (!outage_.ready(engine)) return;  // waited out an outage, or gave up on it
      const std::size_t i = next_.fetch_add(1);
      if (i >= pending_.size()) return;
      run_one(pending_[i], engine);
      warm_next(engine);
    }
  }

  // engine.warm: between its tasks a worker makes a spare (warm_spares.h)
  // for the next pending task's sandbox, which that task's run then claims.
  // Spares left when the batch ends expire (engine.warm_ttl_seconds) or go
  // with `reap`.
  void warm_next(Engine& engine) {
    const std::size_t next = next_.load();
    if (next >= pending_.size() || interrupted_signal() != 0 || outage_.gave_up()) return;
    const Config config = task_config(opt_.config, *pending_[next].task);
    if (config.engine.warm <= 0) return;
    (void)keep_warm(config, opt_.timeout_seconds, engine, static_cast<int>(config.engine.warm));
  }

  AttemptFn attempt(const EvalTask& task, Engine& engine) {
    return [this, &task, &engine]() -> Result<RunResult> {
      const Config config = task_config(opt_.config, task);
      RunEventFn events;
      if (opt_.events) {
        events = [this, id = task.id](const RunEvent& e) {
          RunEvent tagged = e;
          tagged.task = id;
          opt_.events(tagged);
        };
      }
      if (task.is_instruction()) {
        RunRequest req;
        req.config = config;
        req.instruction = task.instruction;
        req.timeout_seconds = opt_.timeout_seconds;
        req.judge = judge_options();
        req.events = events;
        req.signer = opt_.signer;
        if (auto st = slots_.acquire(); !st) return st.error();
        auto r = run_agent(req, engine, store_, nullptr, true);
        slots_.release();
        return r;
      }
      ProofRequest req;
      req.config = config;
      req.patch_json = task.patch_json;
      req.timeout_seconds = opt_.timeout_seconds;
      req.engine_checked = true;
      req.acquire_run_slot = [this] { return slots_.acquire(); };
      req.release_run_slot = [this] { slots_.release(); };
      req.events = events;
      req.signer = opt_.signer;
      return prove_judged(req, judge_options(), engine, store_, nullptr);
    };
  }

  void run_one(const Pending& p, Engine& engine) {
    const AttemptFn attempt = this->attempt(*p.task, engine);
    const EvalTask& task = *p.task;
    EvalRow started;
    started.id = task.id;
    notify({EvalEvent::Kind::kStarted, started, {}});
    const auto t0 = std::chrono::steady_clock::now();
    const TaskVerdict v = run_attempts(attempt, opt_.attempts, [this, &engine](const Error& e) {
      return outage_.ride_out(engine, e);
    });
    // No verdict, no file: a resumed eval runs it again.
    if (v.interrupted || v.not_run) return;
    const long ms = ms_since(t0);
    EvalRow row;
    row.id = task.id;
    row.category = v.category;
    row.attempts = static_cast<int>(v.attempts.size());
    row.ms = ms;
    row.reason = v.final ? (v.final->tests_passed ? "" : one_line(v.final->reason)) : one_line(v.final.error().message);
    if (v.final) {
      row.resources = v.final->resources;
      if (v.final->attestation.is_object()) row.attestation = v.final->attestation.value("path", "");
      row.patch_format = v.final->patch_format;
      if (v.final->change.is_object()) {
        row.added = v.final->change["diff_stats"].value("added", std::size_t{0});
        row.removed = v.final->change["diff_stats"].value("removed", std::size_t{0});
      }
    }
    row.changed = p.changed;
    // The key of what really ran: the seed and image the run itself saw,
    // when it got that far (either may have changed since the key was made).
    ResumeKey key = p.key;
    if (v.final && !v.final->seed_sha256.empty()) key.seed = v.final->seed_sha256;
    // (Only where the key holds a digest: on Kubernetes the key names the
    // image's reference, and the run's digest would never match it again.)
    if (v.final && !v.final->image_digest.empty() && ResumeKeys::is_digest(p.key.image)) {
      key.image = ResumeKeys::image_part(v.final->image_digest, p.planner_image);
    }
    row.suspicious = v.final && result_has_suspicious(*v.final);
    const std::string text =
        result_document(task, v, ms, key, p.changed).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    if (auto st = write_file_atomic(eval_result_path(opt_.out_dir, task.id), text); !st) {
      std::lock_guard<std::mutex> lock(mu_);
      if (write_error_.empty()) write_error_ = "writing the result of task " + task.id + ": " + st.error().message;
    }
    std::lock_guard<std::mutex> lock(mu_);
    report_.rows.push_back(row);
    if (observer_) observer_({EvalEvent::Kind::kFinished, row, {}});
  }

  JudgeOptions judge_options() const {
    JudgeOptions j;
    j.baseline = opt_.baseline;
    j.rerun = 0;          // run_attempts reruns a failing task
    j.infra_retries = 0;  // and retries an infrastructure failure
    return j;
  }

  void notify(const EvalEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (observer_) observer_(e);
  }

  struct FdCloser {
    int* fd;
    ~FdCloser() {
      if (*fd >= 0) ::close(*fd);
    }
  };
  int lock_fd_ = -1;
  FdCloser lock_closer_{&lock_fd_};
  const std::vector<EvalTask>& tasks_;
  const EvalOptions& opt_;
  const RunStore& store_;
  const EvalObserver& observer_;
  std::vector<Pending> pending_;
  std::atomic<std::size_t> next_{0};
  std::mutex mu_;
  RunSlots slots_;
  EngineOutage outage_;
  EvalReport report_;
  std::string write_error_;
};

}  // namespace

std::string eval_result_path(const std::string& out_dir, const std::string& task_id) {
  return out_dir + "/results/" + task_id + ".json";
}

Config task_config(const Config& base, const EvalTask& task) {
  Config c = base;
  if (!task.seed.empty()) c.seed = task.seed;
  if (task.has_allow) c.allow = task.allow;
  if (!task.test_command.empty()) c.test_command = task.test_command;
  if (!task.image.empty()) c.images.sandbox = task.image;
  return c;
}

ResumeCheck check_resume(const std::string& out_dir, const EvalTask& task, const ResumeKey& key) {
  ResumeCheck out;
  std::ifstream f(eval_result_path(out_dir, task.id), std::ios::binary);
  if (!f) return out;
  std::stringstream ss;
  ss << f.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || !j.contains("eval") || !j["eval"].is_object()) return out;
  const json& e = j["eval"];
  EvalRow row;
  row.id = task.id;
  row.skipped = true;
  if (!category_from_name(e.value("category", ""), &row.category)) return out;
  // An infra_error is run again (the engine may have flaked); every other
  // category is a verdict, an isolation violation included: a finding about
  // the engine that a re-run must not wash out.
  if (row.category == Category::kInfraError) return out;
  out.changed = changed_parts(e.contains("key") ? e["key"] : json(), key);
  if (!out.changed.empty()) return out;
  row.attempts = e.contains("attempts") && e["attempts"].is_array() ? static_cast<int>(e["attempts"].size()) : 1;
  row.ms = e.value("ms", 0L);
  row.reason = j.value("reason", "");
  row.patch_format = j.value("patch_format", "");
  if (j.contains("resources")) row.resources = j["resources"];
  if (j.contains("attestation") && j["attestation"].is_object()) row.attestation = j["attestation"].value("path", "");
  if (j.contains("diff_stats") && j["diff_stats"].is_object()) {
    row.added = j["diff_stats"].value("added", std::size_t{0});
    row.removed = j["diff_stats"].value("removed", std::size_t{0});
  }
  RunResult stored;
  stored.suspicious = findings_from_json(j.value("suspicious", json::array()));
  stored.findings = findings_from_json(j.value("findings", json::array()));
  row.suspicious = result_has_suspicious(stored);
  out.finished = row;
  return out;
}

Result<EvalReport> run_eval(const std::vector<EvalTask>& tasks, const EvalOptions& opt,
                            const RunStore& store, const EvalObserver& observer) {
  Runner r(tasks, opt, store, observer);
  return r.run();
}

}  // namespace lazyagent
