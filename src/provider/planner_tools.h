// The planner's read-only tools over the seed snapshot, inside the planner
// container (planner_loop.h offers them to the model).
//
// The snapshot arrives in the planner container read-only (/task/seed, a
// copy of the seed's files uploaded with the task, never the user's
// directory). Every argument comes from the model and is untrusted:
//   - a path is relative, without '..' components, NUL or control
//     characters; what it resolves to (symlinks followed by realpath) must
//     stay under the snapshot root: "../x", "/etc/passwd" and a symlink that
//     points out are refused with a bounded error result;
//   - read_file returns at most `max_lines` lines and `result_bytes` bytes a
//     call (a larger range is an error naming the cap);
//   - search compiles the regex with RE2 (linear-time matching, a memory cap:
//     no catastrophic backtracking), searches at most `search_bytes` of file
//     content and reports at most `max_hits` lines;
//   - every result is valid UTF-8 and at most `result_bytes` long.
// A tool never fails the loop: every problem is a ToolResult with ok=false
// and a stable code, which the model reads and may correct.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

struct ToolLimits {
  std::size_t result_bytes = 16 * 1024;   // planner.tool_result_bytes
  std::size_t max_lines = 2000;           // read_file lines per call
  std::size_t max_listed = 5000;          // list_files entries examined per call
  std::size_t search_bytes = 64u << 20;   // file content one search reads
  std::size_t max_hits = 200;             // search lines reported
  std::size_t max_pattern_bytes = 1000;   // regex and glob length
  long regex_max_mem = 8l << 20;          // RE2's program memory
};

struct ToolResult {
  bool ok = true;
  std::string code;     // "" when ok; else bad_arguments, bad_path, path_escapes, no_such_file,
                        // not_a_file, not_text, range_too_large, bad_regex, bad_glob, unknown_tool
  std::string content;  // what the model reads (the error message when !ok)
};

// The names of the read-only tools (submit_patch is the loop's, not here).
inline constexpr const char* kToolListFiles = "list_files";
inline constexpr const char* kToolReadFile = "read_file";
inline constexpr const char* kToolSearch = "search";
inline constexpr const char* kToolSubmitPatch = "submit_patch";

class SnapshotTools {
 public:
  // `root`: the snapshot directory. The caller checks it exists.
  SnapshotTools(std::string root, ToolLimits limits);

  // Runs tool `name` with `arguments` (the model's JSON text).
  ToolResult call(const std::string& name, const std::string& arguments) const;

  ToolResult list_files(const std::string& glob) const;
  ToolResult read_file(const std::string& path, long long start_line, long long end_line) const;
  ToolResult search(const std::string& regex, const std::string& glob) const;

  const ToolLimits& limits() const { return limits_; }

 private:
  // The absolute path under the root `rel` names, or a ToolResult error.
  bool resolve(const std::string& rel, std::string* abs, ToolResult* err) const;
  std::vector<std::pair<std::string, std::size_t>> files(const std::string& glob, bool* more) const;

  std::string root_;       // as given
  std::string real_root_;  // realpath of it
  ToolLimits limits_;
};

// The OpenAI `tools` array: list_files, read_file, search, submit_patch.
nlohmann::json tool_definitions();

}  // namespace lazyagent
