// The task file of `lazyagent-oci eval`: JSON Lines, one task per line.
//
//   {"id": "fix-1", "seed": "seed", "allow": ["calculator.py"],
//    "test_command": "python3 -m unittest -v", "patch": {"files": [...]}}
//   {"seed": "seed", "patch": "patches/wrong.json"}
//   {"id": "ask-1", "instruction": "fix calculator.add"}
//   {"id": "diff-1", "diff": "--- a/calculator.py\n+++ b/calculator.py\n@@ ..."}
//
// Keys: `id` (optional; default "line-N"; [A-Za-z0-9][A-Za-z0-9._-]{0,63},
// unique: it names the task's result file), `seed` (optional, default the
// config's; relative paths are relative to the task file's directory),
// `allow` (array of strings, replaces the config's list), `test_command`,
// `image` (the sandbox image), and exactly one of `patch` (a patch object in
// the JSON form, or the path of a file holding a patch in either form,
// patch_format.h), `diff` (a unified diff's text) or `instruction` (the
// planner asks the model, as `run` does). Nothing else: an unknown key is an
// error, as in the config. SWE-bench predictions are read by swe_bench.h.
//
// The file is judged as a whole before anything runs: every bad line is
// reported with its 1-based line number and a reason code, and a file with
// any bad line is refused (nothing half-run). Blank lines are skipped.
// Parsing is pure (parse_task_lines); reading patch files and resolving
// paths against the file's directory is resolve_task_files.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace lazyagent {

namespace task_reason {
inline constexpr const char* kMalformedJson = "malformed_json";
inline constexpr const char* kNotAnObject = "not_an_object";
inline constexpr const char* kUnknownKey = "unknown_key";
inline constexpr const char* kDuplicateKey = "duplicate_key";
inline constexpr const char* kBadType = "bad_type";
inline constexpr const char* kEmptyValue = "empty_value";
inline constexpr const char* kInvalidUtf8 = "invalid_utf8";
inline constexpr const char* kBadId = "bad_id";
inline constexpr const char* kDuplicateId = "duplicate_id";
inline constexpr const char* kNoPatchOrInstruction = "no_patch_or_instruction";
inline constexpr const char* kPatchAndInstruction = "patch_and_instruction";  // more than one of patch/diff/instruction
inline constexpr const char* kUnreadablePatchFile = "unreadable_patch_file";
inline constexpr const char* kUnreadableSeed = "unreadable_seed";
inline constexpr const char* kLineTooLong = "line_too_long";
inline constexpr const char* kNoTasks = "no_tasks";
}  // namespace task_reason

inline constexpr std::size_t kMaxTaskLineBytes = 1 << 20;
inline constexpr std::size_t kMaxTasks = 100000;

struct TaskLineError {
  std::size_t line = 0;  // 1-based; 0 for the file as a whole
  std::string code;      // task_reason::k*
  std::string message;   // one sentence, safe to print (no raw control bytes)
};

struct EvalTask {
  std::size_t line = 0;
  std::string id;
  std::string seed;                // "" = the config's
  std::vector<std::string> allow;  // empty + !has_allow = the config's
  bool has_allow = false;
  std::string test_command;        // "" = the config's
  std::string image;               // "" = the config's
  std::string patch_json;          // the patch's text: inline JSON, a `diff`, or a file's content once resolved
  std::string patch_file;          // set when `patch` named a file
  std::string instruction;         // set for planner tasks
  bool is_instruction() const { return !instruction.empty(); }
};

struct ParsedTasks {
  std::vector<EvalTask> tasks;
  std::vector<TaskLineError> errors;  // in line order
  bool ok() const { return errors.empty(); }
};

// Pure: judges every line; paths are left as written.
ParsedTasks parse_task_lines(std::string_view text);

// Effectful: makes relative `seed` and `patch` paths relative to base_dir,
// reads each patch file (at most 1 MiB) and checks that each task's own seed
// is a readable directory (check_seed_dir); failures are added to
// parsed->errors against their line (unreadable_patch_file, unreadable_seed).
void resolve_task_files(ParsedTasks* parsed, const std::string& base_dir);

// A task id: [A-Za-z0-9][A-Za-z0-9._-]{0,63} (it names the task's result file).
bool valid_task_id(const std::string& id);

// "line 3: unknown_key: unknown key 'sed' (keys: id, seed, ...)"
std::string describe_task_error(const TaskLineError& e);

// The identity of a task's content (id, seed path, allow, command, image,
// patch text, instruction), so that a resumed eval only skips a task whose
// result is for the same task.
std::string task_sha256(const EvalTask& t);

}  // namespace lazyagent
