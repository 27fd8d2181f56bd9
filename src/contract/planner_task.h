// What the planner is asked, and how its answer is read. Pure.
//
// The orchestrator builds a PlannerTask from the seed snapshot and the config
// and uploads it to the planner container as /task/task.json. Inside, `plan`
// turns it into a chat request, sends it to the provider and extracts one
// patch from the reply. The reply is untrusted: a bare JSON object, a bare
// unified diff, or exactly one fenced code block holding either is accepted,
// anything else is refused (exit 4), and the patch then meets the same
// contract twice (in the planner and again in the orchestrator), in its form
// (patch_format.h). `patch.format` says which form the prompt asks for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "contract/patch_contract.h"
#include "contract/chat_request.h"
#include "contract/patch_format.h"
#include "util/result.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

inline constexpr const char* kDefaultInstruction =
    "Fix calculator.add so that the tests pass, without changing the tests.";

struct TaskFile {
  std::string path;
  std::string content;
  bool editable = false;  // on the patch allowlist
};

// What the planner learns from the previous attempt of `run --attempts N`.
// The test output comes from the sandbox: it is untrusted, so it is cut to
// its last kMaxFeedbackOutputBytes (runners print failures and their summary
// last) and every control character is escaped (terminal_text.h) before it
// reaches the prompt. The planner re-applies the bound on its side.
inline constexpr std::size_t kMaxFeedbackOutputBytes = 8000;
inline constexpr std::size_t kMaxFeedbackTextBytes = 2000;

struct AttemptFeedback {
  int attempt = 0;            // the attempt that failed; 0 = no feedback (first attempt)
  std::string reason;         // why it did not pass, with the triage ("newly broken: ...")
  std::string patch_json;     // its patch ("" when it was refused)
  std::string test_output;    // bounded and escaped
  bool output_cut = false;
};

AttemptFeedback bounded_feedback(int attempt, std::string_view reason, std::string_view patch_json,
                                 std::string_view test_output);

// What the planner learns from the baseline (the unpatched seed's tests, run
// before the planner: triage_run.h run_baseline) when they fail: the failing
// tests' names and the tail of the output, where runners print tracebacks.
// Untrusted like the feedback: bounded and escaped, here and in the planner.
inline constexpr std::size_t kMaxBaselineFailing = 50;
inline constexpr std::size_t kMaxBaselineNameBytes = 300;
inline constexpr std::size_t kMaxRepoMapBytes = 1u << 20;  // config planner.map_bytes at most

struct BaselineFacts {
  bool present = false;              // the baseline ran first and did not pass
  std::vector<std::string> failing;  // failed test ids, at most kMaxBaselineFailing
  std::size_t failing_total = 0;
  std::string output;                // its last kMaxFeedbackOutputBytes, escaped
  bool output_cut = false;
};

BaselineFacts bounded_baseline(const std::vector<std::string>& failing, std::size_t failing_total,
                               std::string_view output);

// The planner's read-only tool loop (planner_loop.h), from config `planner:`.
// Off: the one-shot prompt. On: the model may call list_files, read_file and
// search over the snapshot (uploaded with the task to /task/seed, read-only)
// and ends with submit_patch; bounded by turns, bytes per tool result, wall
// time and tokens (`run --max-tokens`).
struct LoopSettings {
  bool tools = false;
  int max_turns = 20;
  std::size_t tool_result_bytes = 16 * 1024;
  long loop_seconds = 300;
  std::string tool_choice = "auto";  // auto | required
  long max_reply_tokens = 0;         // per reply; 0 = omit
  long max_tokens = 0;               // all turns; 0 = no ceiling
};

// Where the snapshot sits in the planner container, and its name in the task upload.
inline constexpr const char* kSnapshotDir = "/task/seed";
inline constexpr const char* kSnapshotUploadDir = "seed";
// What the snapshot upload carries at most (a larger file is not sent).
inline constexpr std::size_t kMaxSnapshotFileBytes = 4u << 20;
inline constexpr std::size_t kMaxSnapshotBytes = 256u << 20;

struct PlannerTask {
  std::string task_id;
  std::string instruction;
  std::string test_command;
  std::vector<TaskFile> files;  // the seed's text sources, tests as read-only context
  ContractLimits contract;
  std::string patch_format = "files";  // what the prompt asks for: files | diff
  std::vector<std::string> skipped;  // seed files left out (binary, too large)
  std::string repo_map;  // repo_map.h: every path with its size and top-level definitions, bounded
  // What the context holds and why (`task show` prints it): {budget_bytes,
  // used_bytes, token_estimate, included: [{path, bytes, why}], cut: count,
  // cut_sample: [{path, why}], map_bytes}. why: editable, named_by_baseline
  // (the baseline's output names it), named (by the instruction or the
  // previous attempt's output), test, source; cut: over_budget, binary.
  nlohmann::json context;
  // How the planner talks to the provider (never the URL or key: those are secrets).
  long connect_timeout_ms = 10000;
  long timeout_ms = 120000;
  int max_retries = 3;
  ResponseFormat response_format = ResponseFormat::kJsonSchema;
  AttemptFeedback feedback;  // from the previous attempt, if any
  BaselineFacts baseline;    // the unpatched seed's failing tests, if run first
  LoopSettings loop;
};

// Text files of the seed (valid UTF-8, no NUL), the editable ones (on the
// allowlist) first, then the rest, up to `max_bytes` in total; others are
// listed in `skipped`. The seed's own file list
// (seed_source.h): what the model sees is what is tested. A streamed
// snapshot's files are read from disk, checked against their hashes.
//
// First, outside the budget, the repository map (repo_map.h, at most
// config planner.map_bytes). Order within the budget: the editable files,
// then the files `baseline`'s output names as locations (traceback_paths.h),
// then files the instruction or `feedback`'s test output names (a
// traceback's `File "x.py"`, a path, a module name), then tests, then the
// rest by path. The list of what did not fit follows in the prompt, bounded;
// the tool loop reads the rest on demand. `context` records it.
PlannerTask build_task(const SeedSnapshot& seed, const Config& config,
                       const std::string& instruction, const std::string& task_id,
                       std::size_t max_bytes = 256 * 1024, const AttemptFeedback* feedback = nullptr,
                       const BaselineFacts* baseline = nullptr);

nlohmann::json task_to_json(const PlannerTask& task);
Result<PlannerTask> task_from_json(const std::string& text);  // kUsage errors

ChatRequest build_chat_request(const PlannerTask& task);

// The patch format as a JSON schema, for response_format json_schema:
// {"name":"patch","schema":{...}}. Paths are an enum of the allowlist when
// every entry is a file (a directory entry allows any path string); the
// schema keeps to what strict structured outputs accept everywhere (every
// property required, no additional properties, no length or count limits:
// the contract checks those).
nlohmann::json patch_json_schema(const ContractLimits& contract);

// The patch inside a model's reply: the whole reply when it is a JSON object
// or a unified diff, else the content of its only fenced code block when that
// is one of them. kPatch error otherwise.
Result<std::string> extract_patch_json(const std::string& reply);

// Findings (code "secret_in_content") for files whose content carries one of
// the secrets, e.g. the API key echoed back by the model.
std::vector<Finding> secret_findings(const Patch& patch, const std::vector<std::string>& secrets);
// The same for a patch in either form (a diff: its paths and added lines).
std::vector<Finding> secret_findings(const PatchCheck& patch, const std::vector<std::string>& secrets);

}  // namespace lazyagent
