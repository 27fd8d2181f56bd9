// What the eval report shows, read from an eval's out directory
// (eval_runner.h's layout: summary.json and results/<task-id>.json).
//
// The report never recomputes a verdict: the counts are summary.json's, each
// task's category is its result file's `eval.category`. Categories are
// strings (whatever the eval wrote, including ones this build does not know,
// e.g. isolation_violation), shown in a fixed order for the known ones and
// alphabetically after them. Every string here is hostile (written by or
// about code under test) and is escaped where the page is made
// (html_text.h); the loader only bounds sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace lazyagent {

struct ReportAttempt {
  std::string outcome, detail, run_id;
};

struct ReportTest {
  std::string id, outcome;
};

struct ReportTask {
  std::string id;
  std::string category;                 // eval.category ("not_run" when no result file)
  int line = 0;                         // line in the task file (0: unknown)
  long ms = 0;                          // the task's wall time in the eval
  std::string reason;                   // why not passed, one line (or the error)
  std::vector<std::string> reason_codes;  // refusal findings' codes, or the error kind
  std::vector<std::string> findings;    // "code [path]: message" per contract finding
  std::vector<std::string> suspicious;  // "code [path:line]: message" per suspicious finding
  std::string run_id;
  std::vector<ReportAttempt> attempts;
  nlohmann::json triage;                // the result's triage object (null: none)
  std::vector<ReportTest> tests;        // the patched run's per-test outcomes
  std::string test_output;              // its tail, bounded
  bool test_output_cut = false;
  int test_exit_code = -1;
  std::vector<std::pair<std::string, long>> timings;  // step -> ms, in the result's order
  std::optional<std::int64_t> cpu_ms, memory_peak_bytes;  // from `resources` when available
  std::string patch_format;
  long added = 0, removed = 0;
  std::vector<std::string> changed_paths;
  bool has_change = false;              // the run stored a proven change (diff_sha256)
  std::string diff;                     // the proven diff, bounded ("" when none)
  bool diff_cut = false;
  std::string diff_note;                // why there is no diff, when there is none
  bool isolation_violation = false;     // category or the run's own category says so
  std::string attestation_keyid;        // the signed verdict's key id ("" = not signed; docs/signing.md)
  std::string attestation_path;
};

struct ReportData {
  std::string out_dir;
  nlohmann::json summary;               // summary.json as written
  std::vector<std::string> categories;  // known ones first, then others, each once
  std::vector<ReportTask> tasks;        // task-file order
  std::vector<std::string> problems;    // result files that could not be read
};

// Bounds on what one task puts into the page.
inline constexpr std::size_t kReportOutputTailBytes = 6 * 1024;
inline constexpr std::size_t kReportDiffBytes = 48 * 1024;

// The order categories are shown in; unknown names go after these.
const std::vector<std::string>& known_report_categories();

// A category's color class (report_svg.h's k0..k11) and its place in the
// default order of the task list (lower first: what a reviewer reads first).
int report_category_color(const std::string& category);
int report_category_rank(const std::string& category);

// A result file (its parsed JSON) as a task; `id` when the file names none.
ReportTask report_task_from_result(const std::string& id, const nlohmann::json& result);

// The category names summary.json holds counts for ({"count", "ids"} groups
// that are not skipped/not_run/suspicious/suspicious_passed/changed), plus
// any the tasks name, ordered as described above.
std::vector<std::string> report_categories(const nlohmann::json& summary, const std::vector<ReportTask>& tasks);

// The proven diff of a run id, or why there is none.
using ReportDiffSource = std::function<Result<std::string>(const std::string& run_id)>;

// Reads DIR/summary.json (required) and every DIR/results/*.json; tasks in
// summary.json's not_run group get a row of category "not_run". `diffs` may
// be empty (no diffs then).
Result<ReportData> load_report_data(const std::string& out_dir, const ReportDiffSource& diffs);

}  // namespace lazyagent
