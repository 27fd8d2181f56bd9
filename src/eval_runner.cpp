#include "eval_runner.h"

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
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "agent_run.h"
#include "elapsed.h"
#include "interrupt.h"
#include "sandbox_run.h"
#include "terminal_text.h"
#include "triage_run.h"

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

// The result file: what `test --json` / `run --json` prints for the final
// attempt, plus the eval's own fields.
json result_document(const EvalTask& task, const TaskVerdict& v, long ms) {
  json j;
  if (v.final) {
    j = result_to_json(*v.final);
  } else {
    j = {{"error", to_valid_utf8(v.final.error().message)}, {"error_kind", error_kind_name(v.final.error().kind)}};
  }
  json attempts = json::array();
  for (const auto& a : v.attempts) {
    attempts.push_back({{"outcome", a.outcome}, {"detail", to_valid_utf8(a.detail)}, {"run_id", a.run_id}});
  }
  j["task_id"] = task.id;
  j["eval"] = {{"category", category_name(v.category)},
               {"attempts", attempts},
               {"task_sha256", task_sha256(task)},
               {"line", task.line},
               {"ms", ms}};
  return j;
}

// The patch has suspicious findings: flagged, or refused for them (patch.suspicious: refuse).
bool result_has_suspicious(const TestResult& r) {
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
 public:
  Runner(const std::vector<EvalTask>& tasks, const EvalOptions& opt, const RunStore& store,
         const EvalObserver& observer)
      : tasks_(tasks), opt_(opt), store_(store), observer_(observer), slots_(std::max(1, opt.jobs)) {}

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

    for (const auto& t : tasks_) {
      if (auto row = finished_row(opt_.out_dir, t)) {
        report_.rows.push_back(*row);
        notify({EvalEvent::Kind::kSkipped, *row});
      } else {
        pending_.push_back(&t);
      }
    }
    // One engine (one connection) per worker, made here, before any thread starts.
    const int prepare = opt_.prepare < 0 ? opt_.jobs : opt_.prepare;
    const int jobs = std::max(1, std::min<int>(opt_.jobs + prepare, static_cast<int>(pending_.size())));
    std::vector<std::unique_ptr<Engine>> engines;
    for (int i = 0; i < jobs && !pending_.empty(); ++i) {
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
    if (!write_error_.empty()) return engine_error(write_error_);
    return report_;
  }

  void work(Engine& engine) {
    for (;;) {
      if (interrupted_signal() != 0) return;
      const std::size_t i = next_.fetch_add(1);
      if (i >= pending_.size()) return;
      const EvalTask& task = *pending_[i];
      run_one(task, attempt(task, engine));
    }
  }

  AttemptFn attempt(const EvalTask& task, Engine& engine) {
    return [this, &task, &engine]() -> Result<TestResult> {
      const Config config = task_config(opt_.config, task);
      if (task.is_instruction()) {
        RunRequest req;
        req.config = config;
        req.instruction = task.instruction;
        req.timeout_seconds = opt_.timeout_seconds;
        req.judge = judge_options();
        if (auto st = slots_.acquire(); !st) return st.error();
        auto r = run_agent(req, engine, store_, nullptr, true);
        slots_.release();
        return r;
      }
      TestRequest req;
      req.config = config;
      req.patch_json = task.patch_json;
      req.timeout_seconds = opt_.timeout_seconds;
      req.engine_checked = true;
      req.acquire_run_slot = [this] { return slots_.acquire(); };
      req.release_run_slot = [this] { slots_.release(); };
      return run_judged_test(req, judge_options(), engine, store_, nullptr);
    };
  }

  void run_one(const EvalTask& task, const AttemptFn& attempt) {
    EvalRow started;
    started.id = task.id;
    notify({EvalEvent::Kind::kStarted, started});
    const auto t0 = std::chrono::steady_clock::now();
    const TaskVerdict v = run_attempts(attempt, opt_.attempts);
    if (v.interrupted) return;  // no verdict, no file: a resumed eval runs it again
    const long ms = ms_since(t0);
    EvalRow row;
    row.id = task.id;
    row.category = v.category;
    row.attempts = static_cast<int>(v.attempts.size());
    row.ms = ms;
    row.reason = v.final ? (v.final->tests_passed ? "" : one_line(v.final->reason)) : one_line(v.final.error().message);
    if (v.final) {
      row.patch_format = v.final->patch_format;
      if (v.final->change.is_object()) {
        row.added = v.final->change["diff_stats"].value("added", std::size_t{0});
        row.removed = v.final->change["diff_stats"].value("removed", std::size_t{0});
      }
    }
    row.suspicious = v.final && result_has_suspicious(*v.final);
    const std::string text =
        result_document(task, v, ms).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    if (auto st = write_file_atomic(eval_result_path(opt_.out_dir, task.id), text); !st) {
      std::lock_guard<std::mutex> lock(mu_);
      if (write_error_.empty()) write_error_ = "writing the result of task " + task.id + ": " + st.error().message;
    }
    std::lock_guard<std::mutex> lock(mu_);
    report_.rows.push_back(row);
    if (observer_) observer_({EvalEvent::Kind::kFinished, row});
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
  std::vector<const EvalTask*> pending_;
  std::atomic<std::size_t> next_{0};
  std::mutex mu_;
  RunSlots slots_;
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

std::optional<EvalRow> finished_row(const std::string& out_dir, const EvalTask& task) {
  std::ifstream f(eval_result_path(out_dir, task.id), std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || !j.contains("eval") || !j["eval"].is_object()) return std::nullopt;
  const json& e = j["eval"];
  EvalRow row;
  row.id = task.id;
  row.skipped = true;
  if (e.value("task_sha256", "") != task_sha256(task)) return std::nullopt;
  if (!category_from_name(e.value("category", ""), &row.category)) return std::nullopt;
  if (row.category == EvalCategory::kInfraError) return std::nullopt;
  row.attempts = e.contains("attempts") && e["attempts"].is_array() ? static_cast<int>(e["attempts"].size()) : 1;
  row.ms = e.value("ms", 0L);
  row.reason = j.value("reason", "");
  row.patch_format = j.value("patch_format", "");
  if (j.contains("diff_stats") && j["diff_stats"].is_object()) {
    row.added = j["diff_stats"].value("added", std::size_t{0});
    row.removed = j["diff_stats"].value("removed", std::size_t{0});
  }
  TestResult stored;
  stored.suspicious = findings_from_json(j.value("suspicious", json::array()));
  stored.findings = findings_from_json(j.value("findings", json::array()));
  row.suspicious = result_has_suspicious(stored);
  return row;
}

Result<EvalReport> run_eval(const std::vector<EvalTask>& tasks, const EvalOptions& opt,
                            const RunStore& store, const EvalObserver& observer) {
  Runner r(tasks, opt, store, observer);
  return r.run();
}

}  // namespace lazyagent
