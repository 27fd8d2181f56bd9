#include "provider/planner_tools.h"

#include <re2/re2.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "util/path_glob.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

ToolResult tool_error(const std::string& code, const std::string& message) {
  return ToolResult{false, code, "error (" + code + "): " + message};
}

// Untrusted text quoted in a message: one line, bounded.
std::string shown_arg(std::string_view s) {
  bool cut = false;
  std::string q = escape_for_terminal(truncate_utf8(s, 120, cut));
  for (char& c : q) c = c == '\n' ? ' ' : c;
  return "'" + q + (cut ? "...'" : "'");
}

std::string realpath_of(const std::string& p) {
  std::unique_ptr<char, decltype(&std::free)> r(::realpath(p.c_str(), nullptr), &std::free);
  return r ? std::string(r.get()) : std::string();
}

bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

// The result the model reads: valid UTF-8, at most max bytes, a note when cut.
ToolResult bounded(ToolResult r, std::size_t max) {
  r.content = to_valid_utf8(r.content);
  if (r.content.size() <= max) return r;
  const std::string note = "\n[result cut at " + std::to_string(max) + " bytes]";
  bool cut = false;
  r.content = truncate_utf8(r.content, max > note.size() ? max - note.size() : 0, cut) + note;
  return r;
}

}  // namespace

SnapshotTools::SnapshotTools(std::string root, ToolLimits limits)
    : root_(std::move(root)), real_root_(realpath_of(root_)), limits_(limits) {}

bool SnapshotTools::resolve(const std::string& rel, std::string* abs, ToolResult* err) const {
  if (rel.empty()) return *err = tool_error("bad_path", "the path is empty"), false;
  if (rel.size() > 4096) return *err = tool_error("bad_path", "the path is longer than 4096 bytes"), false;
  for (unsigned char c : rel) {
    if (c < 0x20 || c == 0x7f) return *err = tool_error("bad_path", "the path holds a control character"), false;
  }
  if (rel[0] == '/') {
    return *err = tool_error("bad_path", "absolute path " + shown_arg(rel) + ": give a path relative to the project root"),
           false;
  }
  std::size_t from = 0;
  while (from <= rel.size()) {
    const std::size_t slash = std::min(rel.find('/', from), rel.size());
    if (rel.compare(from, slash - from, "..") == 0 && slash - from == 2) {
      return *err = tool_error("bad_path", "path " + shown_arg(rel) + " has a '..' component"), false;
    }
    from = slash + 1;
  }
  if (real_root_.empty()) return *err = tool_error("no_such_file", "the snapshot is not available"), false;
  const std::string real = realpath_of(real_root_ + "/" + rel);
  if (real.empty()) return *err = tool_error("no_such_file", "no file " + shown_arg(rel) + " in the project"), false;
  if (!under(real, real_root_)) {
    return *err = tool_error("path_escapes", "path " + shown_arg(rel) + " leads out of the project (a symbolic link)"),
           false;
  }
  *abs = real;
  return true;
}

std::vector<std::pair<std::string, std::size_t>> SnapshotTools::files(const std::string& glob, bool* more) const {
  std::vector<std::pair<std::string, std::size_t>> out;
  *more = false;
  if (real_root_.empty()) return out;
  const bool all = glob.empty() || glob == "*" || glob == "**";
  const PathGlob g(all ? "**" : glob);
  std::error_code ec;
  std::size_t seen = 0;
  for (fs::recursive_directory_iterator it(real_root_, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (++seen > limits_.max_listed) {
      *more = true;
      break;
    }
    const fs::file_status st = it->symlink_status(ec);
    if (ec || !fs::is_regular_file(st)) continue;  // symlinks are not listed, nor followed
    const std::string rel = it->path().string().substr(real_root_.size() + 1);
    if (!all && !g.matches(rel, false)) continue;
    out.emplace_back(rel, static_cast<std::size_t>(it->file_size(ec)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

ToolResult SnapshotTools::list_files(const std::string& glob) const {
  if (glob.size() > limits_.max_pattern_bytes) return tool_error("bad_glob", "the glob is too long");
  if (!glob.empty() && glob != "*" && glob != "**") {
    if (const std::string why = glob_problem(glob); !why.empty()) {
      return tool_error("bad_glob", "glob " + shown_arg(glob) + ": " + why);
    }
  }
  bool more = false;
  const auto list = files(glob, &more);
  ToolResult r;
  r.content = std::to_string(list.size()) + " file(s)" + (more ? " (the walk stopped early: narrow the glob)" : "") +
              ", path and size in bytes:\n";
  for (const auto& [path, size] : list) r.content += path + " " + std::to_string(size) + "\n";
  return bounded(std::move(r), limits_.result_bytes);
}

ToolResult SnapshotTools::read_file(const std::string& path, long long start_line, long long end_line) const {
  if (start_line < 1) return tool_error("bad_arguments", "start_line must be 1 or more");
  if (end_line == 0) end_line = start_line + static_cast<long long>(limits_.max_lines) - 1;
  if (end_line < start_line) return tool_error("bad_arguments", "end_line must not be less than start_line");
  if (end_line - start_line + 1 > static_cast<long long>(limits_.max_lines)) {
    return tool_error("range_too_large", "at most " + std::to_string(limits_.max_lines) +
                                             " lines a call; read the file in parts");
  }
  std::string abs;
  ToolResult err;
  if (!resolve(path, &abs, &err)) return err;
  struct stat st {};
  if (::stat(abs.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return tool_error("not_a_file", shown_arg(path) + " is not a regular file");
  }
  std::ifstream in(abs, std::ios::binary);
  if (!in) return tool_error("no_such_file", "cannot read " + shown_arg(path));
  std::string line, body;
  long long n = 0;
  bool full = false;
  std::size_t read = 0;
  while (std::getline(in, line)) {
    ++n;
    read += line.size() + 1;
    if (line.find('\0') != std::string::npos) return tool_error("not_text", shown_arg(path) + " is not a text file");
    if (n >= start_line && n <= end_line && !full) {
      body += std::to_string(n) + ": " + line + "\n";
      full = body.size() > limits_.result_bytes;
    }
    if (read > limits_.search_bytes) break;  // the line count stays a lower bound
  }
  if (start_line > n && n > 0) {
    return tool_error("bad_arguments", shown_arg(path) + " has " + std::to_string(n) + " lines; start_line " +
                                           std::to_string(start_line) + " is past its end");
  }
  ToolResult r;
  r.content = path + ": lines " + std::to_string(start_line) + "-" + std::to_string(std::min(end_line, n)) +
              " of " + std::to_string(n) + " (each line prefixed with its number and ': ')\n" + body;
  return bounded(std::move(r), limits_.result_bytes);
}

ToolResult SnapshotTools::search(const std::string& regex, const std::string& glob) const {
  if (regex.empty()) return tool_error("bad_regex", "the regex is empty");
  if (regex.size() > limits_.max_pattern_bytes) {
    return tool_error("bad_regex", "the regex is longer than " + std::to_string(limits_.max_pattern_bytes) + " bytes");
  }
  if (!glob.empty() && glob != "*" && glob != "**") {
    if (glob.size() > limits_.max_pattern_bytes) return tool_error("bad_glob", "the glob is too long");
    if (const std::string why = glob_problem(glob); !why.empty()) {
      return tool_error("bad_glob", "glob " + shown_arg(glob) + ": " + why);
    }
  }
  RE2::Options opt;
  opt.set_log_errors(false);
  opt.set_max_mem(limits_.regex_max_mem);
  const RE2 re(regex, opt);
  if (!re.ok()) return tool_error("bad_regex", "regex " + shown_arg(regex) + ": " + re.error());
  bool more = false;
  const auto list = files(glob, &more);
  std::string hits;
  std::size_t count = 0, searched = 0, files_searched = 0;
  bool stopped = false;
  for (const auto& [rel, size] : list) {
    if (count >= limits_.max_hits || searched >= limits_.search_bytes) {
      stopped = true;
      break;
    }
    std::ifstream in(real_root_ + "/" + rel, std::ios::binary);
    std::string line;
    long long n = 0;
    ++files_searched;
    while (std::getline(in, line) && count < limits_.max_hits && searched < limits_.search_bytes) {
      ++n;
      searched += line.size() + 1;
      if (line.find('\0') != std::string::npos) break;  // binary: skipped
      if (!RE2::PartialMatch(line, re)) continue;
      ++count;
      bool cut = false;
      hits += rel + ":" + std::to_string(n) + ": " + truncate_utf8(line, 200, cut) + (cut ? "..." : "") + "\n";
    }
  }
  ToolResult r;
  r.content = std::to_string(count) + " matching line(s) in " + std::to_string(files_searched) + " file(s)" +
              (stopped || more || count >= limits_.max_hits ? " (stopped early at a search limit: narrow the regex or glob)"
                                                           : "") +
              ":\n" + hits;
  return bounded(std::move(r), limits_.result_bytes);
}

ToolResult SnapshotTools::call(const std::string& name, const std::string& arguments) const {
  const json a = json::parse(arguments.empty() ? "{}" : arguments, nullptr, false);
  if (!a.is_object()) return tool_error("bad_arguments", "the arguments are not a JSON object");
  auto str = [&](const char* key, std::string* out, bool required) -> bool {
    if (!a.contains(key) || a[key].is_null()) return !required;
    if (!a[key].is_string()) return false;
    *out = a[key].get<std::string>();
    return true;
  };
  auto integer = [&](const char* key, long long* out) -> bool {
    if (!a.contains(key) || a[key].is_null()) return true;
    if (!a[key].is_number_integer()) return false;
    *out = a[key].get<long long>();
    return true;
  };
  if (name == kToolListFiles) {
    std::string glob;
    if (!str("glob", &glob, false)) return tool_error("bad_arguments", "glob must be a string");
    return list_files(glob);
  }
  if (name == kToolReadFile) {
    std::string path;
    long long start = 1, end = 0;
    if (!str("path", &path, true)) return tool_error("bad_arguments", "path (a string) is required");
    if (!integer("start_line", &start) || !integer("end_line", &end)) {
      return tool_error("bad_arguments", "start_line and end_line must be integers");
    }
    return read_file(path, start, end);
  }
  if (name == kToolSearch) {
    std::string regex, glob;
    if (!str("regex", &regex, true)) return tool_error("bad_arguments", "regex (a string) is required");
    if (!str("glob", &glob, false)) return tool_error("bad_arguments", "glob must be a string");
    return search(regex, glob);
  }
  return tool_error("unknown_tool", "no tool " + shown_arg(name) + " (tools: list_files, read_file, search, submit_patch)");
}

json tool_definitions() {
  auto fn = [](const char* name, const char* description, json properties, json required) {
    return json{{"type", "function"},
                {"function",
                 {{"name", name},
                  {"description", description},
                  {"parameters",
                   {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}}}}}};
  };
  const json glob = {{"type", "string"},
                     {"description", "a glob over paths relative to the project root, e.g. **/*.py; empty = all"}};
  return json::array(
      {fn(kToolListFiles, "List the project's files (path and size), optionally those matching a glob.",
          {{"glob", glob}}, json::array()),
       fn(kToolReadFile, "Read lines of one file of the project, numbered. At most 2000 lines a call.",
          {{"path", {{"type", "string"}, {"description", "relative to the project root"}}},
           {"start_line", {{"type", "integer"}, {"description", "first line, from 1"}}},
           {"end_line", {{"type", "integer"}, {"description", "last line (inclusive)"}}}},
          {"path"}),
       fn(kToolSearch, "Search the project's text files for lines matching a regular expression (RE2 syntax).",
          {{"regex", {{"type", "string"}}}, {"glob", glob}}, {"regex"}),
       fn(kToolSubmitPatch,
          "Submit the final patch and end: either a unified diff (git diff form) in `diff`, or whole new "
          "files in `files`.",
          {{"diff", {{"type", "string"}}},
           {"files",
            {{"type", "array"},
             {"items",
              {{"type", "object"},
               {"properties", {{"path", {{"type", "string"}}}, {"content", {{"type", "string"}}}}},
               {"required", {"path", "content"}}}}}}},
          json::array())});
}

}  // namespace lazyagent
