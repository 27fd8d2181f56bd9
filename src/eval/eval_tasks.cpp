#include "eval/eval_tasks.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "util/digest.h"
#include "contract/patch_contract.h"
#include "contract/seed_snapshot.h"
#include "util/strict_json.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

constexpr const char* kKnownKeys = "id, seed, allow, test_command, image, patch, diff, instruction";

bool known_key(const std::string& k) {
  for (const char* key : {"id", "seed", "allow", "test_command", "image", "patch", "diff", "instruction"}) {
    if (k == key) return true;
  }
  return false;
}

// A key or value quoted for a message: valid UTF-8, control bytes escaped, short.
std::string quote_for_message(std::string_view s) {
  std::string shown = escape_for_terminal(to_valid_utf8(s.substr(0, 80)));
  return "'" + shown + (s.size() > 80 ? "...'" : "'");
}

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
  }
  return true;
}

// Writes a strict JsonValue back as JSON text, keeping string bytes as they
// were decoded (invalid UTF-8 stays invalid, duplicate keys stay), so the
// patch contract judges an inline patch exactly as it would judge the same
// patch in a file. Numbers are not kept by the reader; any number becomes 0,
// which the contract refuses as a number all the same (bad_shape).
void write_json(const JsonValue& v, std::string* out) {
  auto str = [out](const std::string& s) {
    *out += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        *out += '\\';
        *out += static_cast<char>(c);
      } else if (c < 0x20) {
        static const char* hex = "0123456789abcdef";
        *out += "\\u00";
        *out += hex[c >> 4];
        *out += hex[c & 15];
      } else {
        *out += static_cast<char>(c);
      }
    }
    *out += '"';
  };
  switch (v.kind) {
    case JsonValue::Kind::kNull: *out += "null"; break;
    case JsonValue::Kind::kBool: *out += v.text == "true" ? "true" : "false"; break;
    case JsonValue::Kind::kNumber: *out += "0"; break;
    case JsonValue::Kind::kString: str(v.text); break;
    case JsonValue::Kind::kArray:
      *out += '[';
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i) *out += ',';
        write_json(v.items[i], out);
      }
      *out += ']';
      break;
    case JsonValue::Kind::kObject:
      *out += '{';
      for (std::size_t i = 0; i < v.members.size(); ++i) {
        if (i) *out += ',';
        str(v.members[i].key);
        *out += ':';
        write_json(v.members[i].value, out);
      }
      *out += '}';
      break;
  }
}

class LineParser {
 public:
  LineParser(std::size_t line, std::vector<TaskLineError>* errors) : line_(line), errors_(errors) {}

  // Returns true (and fills *task) when the line is a good task.
  bool parse(std::string_view text, EvalTask* task) {
    task->line = line_;
    JsonValue v;
    StrictJsonError err;
    if (text.size() > kMaxTaskLineBytes) {
      return fail(task_reason::kLineTooLong, "the line is longer than " + std::to_string(kMaxTaskLineBytes) + " bytes");
    }
    if (!read_strict_json(text, &v, &err)) return fail(task_reason::kMalformedJson, "not JSON: " + err.message);
    if (v.kind != JsonValue::Kind::kObject) {
      return fail(task_reason::kNotAnObject, std::string("a task must be a JSON object, got ") + kind_name(v.kind));
    }
    std::map<std::string, int> seen;
    bool has_patch = false;
    for (const auto& m : v.members) {
      if (++seen[m.key] == 2) fail(task_reason::kDuplicateKey, "key " + quote_for_message(m.key) + " appears more than once");
      if (seen[m.key] > 1) continue;
      if (!known_key(m.key)) {
        fail(task_reason::kUnknownKey, "unknown key " + quote_for_message(m.key) + " (keys: " + kKnownKeys + ")");
      } else if (m.key == "patch") {
        has_patch = true;
        if (m.value.kind == JsonValue::Kind::kObject) {
          write_json(m.value, &task->patch_json);
        } else if (m.value.kind == JsonValue::Kind::kString) {
          string_field(m, &task->patch_file);
        } else {
          fail(task_reason::kBadType, std::string("'patch' must be a patch object or a file path, got ") + kind_name(m.value.kind));
        }
      } else if (m.key == "diff") {
        if (m.value.kind != JsonValue::Kind::kString) {
          fail(task_reason::kBadType, std::string("'diff' must be a unified diff's text, got ") + kind_name(m.value.kind));
        } else {
          task->patch_json = m.value.text;  // judged by the diff contract when the task runs
        }
      } else if (m.key == "allow") {
        allow_field(m.value, task);
      } else {
        std::string* dest = m.key == "id" ? &task->id
                            : m.key == "seed" ? &task->seed
                            : m.key == "test_command" ? &task->test_command
                            : m.key == "image" ? &task->image
                                               : &task->instruction;
        string_field(m, dest);
      }
    }
    const bool has_instruction = seen.count("instruction") > 0;
    const bool has_diff = seen.count("diff") > 0;
    if (int(has_patch) + int(has_diff) + int(has_instruction) > 1) {
      fail(task_reason::kPatchAndInstruction, "a task has one of 'patch', 'diff' or 'instruction', not several");
    } else if (!has_patch && !has_diff && !has_instruction) {
      fail(task_reason::kNoPatchOrInstruction,
           "a task needs 'patch' (an object or a file), 'diff' (a unified diff) or 'instruction'");
    }
    if (seen.count("id") && !task->id.empty() && !valid_id(task->id)) {
      fail(task_reason::kBadId, "id " + quote_for_message(task->id) +
                                    " must be 1-64 characters of [A-Za-z0-9._-], starting with a letter or digit");
    }
    if (task->id.empty() && !seen.count("id")) task->id = "line-" + std::to_string(line_);
    return ok_;
  }

 private:
  bool fail(const char* code, std::string message) {
    errors_->push_back({line_, code, std::move(message)});
    ok_ = false;
    return false;
  }

  void string_field(const JsonMember& m, std::string* dest) {
    if (m.value.kind != JsonValue::Kind::kString) {
      fail(task_reason::kBadType, "'" + m.key + "' must be a string, got " + kind_name(m.value.kind));
    } else if (m.value.text.empty()) {
      fail(task_reason::kEmptyValue, "'" + m.key + "' is empty");
    } else if (!is_valid_utf8(m.value.text)) {
      fail(task_reason::kInvalidUtf8, "'" + m.key + "' is not valid UTF-8");
    } else {
      *dest = m.value.text;
    }
  }

  void allow_field(const JsonValue& v, EvalTask* task) {
    if (v.kind != JsonValue::Kind::kArray) {
      fail(task_reason::kBadType, std::string("'allow' must be an array of paths, got ") + kind_name(v.kind));
      return;
    }
    task->has_allow = true;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const JsonValue& item = v.items[i];
      const std::string where = "'allow[" + std::to_string(i) + "]'";
      if (item.kind != JsonValue::Kind::kString) {
        fail(task_reason::kBadType, where + " must be a string, got " + kind_name(item.kind));
      } else if (item.text.empty()) {
        fail(task_reason::kEmptyValue, where + " is empty");
      } else if (!is_valid_utf8(item.text)) {
        fail(task_reason::kInvalidUtf8, where + " is not valid UTF-8");
      } else {
        task->allow.push_back(item.text);
      }
    }
  }

  std::size_t line_;
  std::vector<TaskLineError>* errors_;
  bool ok_ = true;
};

bool blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace

ParsedTasks parse_task_lines(std::string_view text) {
  ParsedTasks out;
  std::map<std::string, std::size_t> ids;
  std::size_t line = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (blank(raw)) continue;
    EvalTask task;
    std::vector<TaskLineError> errors;
    const bool good = LineParser(line, &errors).parse(raw, &task);
    out.errors.insert(out.errors.end(), errors.begin(), errors.end());
    if (!task.id.empty() && valid_id(task.id)) {
      auto [it, fresh] = ids.emplace(task.id, line);
      if (!fresh) {
        out.errors.push_back({line, task_reason::kDuplicateId,
                              "id " + quote_for_message(task.id) + " is already used on line " + std::to_string(it->second)});
        continue;
      }
    }
    if (good) out.tasks.push_back(std::move(task));
    if (out.tasks.size() > kMaxTasks) {
      out.errors.push_back({line, task_reason::kLineTooLong, "more than " + std::to_string(kMaxTasks) + " tasks"});
      break;
    }
  }
  if (out.tasks.empty() && out.errors.empty()) {
    out.errors.push_back({0, task_reason::kNoTasks, "the task file holds no task"});
  }
  return out;
}

void resolve_task_files(ParsedTasks* parsed, const std::string& base_dir) {
  auto resolve = [&](const std::string& p) { return p.empty() || p[0] == '/' ? p : base_dir + "/" + p; };
  for (auto& t : parsed->tasks) {
    t.seed = resolve(t.seed);
    if (!t.seed.empty()) {
      if (auto st = check_seed_dir(t.seed); !st) {
        parsed->errors.push_back({t.line, task_reason::kUnreadableSeed,
                                  escape_for_terminal(to_valid_utf8(st.error().message))});
      }
    }
    if (t.patch_file.empty()) continue;
    t.patch_file = resolve(t.patch_file);
    // The largest text any patch may be under the hard caps (patch_contract.h).
    ContractLimits widest;
    widest.max_bytes = kMaxPatchBytesCap;
    widest.max_diff_bytes = kMaxDiffBytesCap;
    const std::size_t max = max_patch_text_bytes(widest);
    std::ifstream f(t.patch_file, std::ios::binary);
    std::string data;
    bool readable = static_cast<bool>(f);
    char buf[65536];
    while (readable && (f.read(buf, sizeof buf) || f.gcount() > 0) && data.size() <= max) {
      data.append(buf, static_cast<std::size_t>(f.gcount()));
    }
    if (readable && f.bad()) readable = false;
    if (!readable) {
      parsed->errors.push_back({t.line, task_reason::kUnreadablePatchFile,
                                "cannot read the patch file " + quote_for_message(t.patch_file)});
    } else if (data.size() > max) {
      parsed->errors.push_back({t.line, task_reason::kUnreadablePatchFile,
                                "the patch file " + quote_for_message(t.patch_file) + " is larger than " +
                                    std::to_string(max) + " bytes"});
    } else {
      t.patch_json = std::move(data);
    }
  }
  std::stable_sort(parsed->errors.begin(), parsed->errors.end(),
                   [](const TaskLineError& a, const TaskLineError& b) { return a.line < b.line; });
}

bool valid_task_id(const std::string& id) { return valid_id(id); }

std::string describe_task_error(const TaskLineError& e) {
  return (e.line ? "line " + std::to_string(e.line) + ": " : std::string()) + e.code + ": " + e.message;
}

std::string task_sha256(const EvalTask& t) {
  std::string s;
  auto add = [&s](const std::string& field) {
    s += std::to_string(field.size());
    s += ':';
    s += field;
  };
  add(t.id);
  add(t.seed);
  add(t.has_allow ? "allow" : "");
  for (const auto& a : t.allow) add(a);
  add(t.test_command);
  add(t.image);
  add(t.patch_json);
  add(t.instruction);
  return sha256_hex(s);
}

}  // namespace lazyagent
