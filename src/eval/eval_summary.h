// The summary of an eval: which tasks landed in which category, counted, as
// JSON (summary.json and `eval --json`) and as a table for people.
// Pure: the runner hands in one row per task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval_attempts.h"
#include "pipeline/engine_wait.h"  // EngineOutageLog: the outages the eval waited out (eval_outage.h)

namespace lazyagent {

struct EvalRow {
  std::string id;
  Category category = Category::kInfraError;
  bool skipped = false;  // finished by an earlier run with the same --out
  int attempts = 1;
  long ms = 0;
  std::string reason;    // why not passed, one line
  std::string patch_format;  // files | diff ("" for a planner task that got no patch)
  std::size_t added = 0, removed = 0;  // the proven change's diff stats
  std::vector<std::string> changed;  // ran again because these parts of its resume key changed (eval_resume.h)
  bool suspicious = false;  // the patch has suspicious findings (suspicious_code.h)
  nlohmann::json resources;  // the final run's `resources` (null: no sandbox ran)
  std::string attestation;   // the signed verdict's envelope file ("" = unsigned; attest_run.h)
};

// `resources` over the tasks' final runs: CPU summed, peaks as the largest
// one task reached; tasks whose figures are unavailable counted apart.
struct ResourceTotals {
  std::size_t measured = 0, unavailable = 0;
  std::int64_t cpu_ms = 0, memory_peak_bytes = 0, pids_peak = 0, tmpfs_peak_bytes = 0;
};

struct EvalSummary {
  std::size_t total = 0;                           // tasks in the file
  std::vector<std::vector<std::string>> by_category = std::vector<std::vector<std::string>>(kCategoryCount);
  std::vector<std::string> skipped;                // resumed, not rerun
  std::vector<std::string> not_run;                // interrupted before their verdict
  // Tasks run again because their resume key changed, per part ("seed",
  // "patch", "config", "image", "key"), in task-file order.
  std::map<std::string, std::vector<std::string>> changed;
  // Tasks whose patch has suspicious findings (whatever their category), and
  // those of them that passed: the ones a reviewer should read first.
  std::vector<std::string> suspicious;
  std::vector<std::string> suspicious_passed;
  // The signed verdicts (--sign-key): task id -> envelope file, in task-file order.
  std::vector<std::pair<std::string, std::string>> attestations;
  bool interrupted = false;
  int jobs = 1;
  long wall_ms = 0;
  std::map<std::string, std::size_t> patch_formats;  // tasks per patch_format
  std::size_t added = 0, removed = 0;                 // lines, over every task's proven change
  ResourceTotals resources;
  std::vector<EngineOutageLog> engine_outages;  // the caller's (EvalReport), in order
  const std::vector<std::string>& ids(Category c) const { return by_category[static_cast<int>(c)]; }
};

// Rows in task-file order; `task_ids` is every task's id in that order (so a
// task without a row is not_run).
EvalSummary summarize(const std::vector<std::string>& task_ids, const std::vector<EvalRow>& rows);

nlohmann::json summary_to_json(const EvalSummary& s);

// category | count | tasks (ids listed up to `max_ids`, then "+N more").
std::string summary_table(const EvalSummary& s, std::size_t max_ids = 8);

// 0: every task has a verdict and none is infra_error or
// isolation_violation; 5: some are (or a task has no verdict), as `test`
// exits 5 for either. Interruption is the caller's (128+N).
int eval_exit_code(const EvalSummary& s);

}  // namespace lazyagent
