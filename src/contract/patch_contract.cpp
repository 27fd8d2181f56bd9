// Patch contract: the validation rules over a patch read by the strict reader.
//
// The text is read with read_strict_json (strict_json.h), not nlohmann: string
// bytes come through as they are (an unpaired surrogate escape as its 3-byte,
// non-UTF-8 form), so the rules below see the bad bytes and report invalid_utf8
// against the right path instead of refusing the whole patch as malformed_json.
// The contract needs depth 3 (object, files array, entry object); the reader's
// nesting limit (kStrictJsonMaxDepth) refuses deeper input as bad_shape before
// it can cost anything.
//
// Order of findings (stable, tests and scripts rely on it): document-level
// shape findings; then each file in index order (its shape, path rules, then
// content rules, each in reason-code order); then patch-level limits.
//
// Text that reads differently from what runs ("Trojan Source", CVE-2021-42574)
// is refused, as rustc's text_direction_codepoint lints and GitHub's diff view
// flag it, with the file, line and column of the first occurrence:
//   bidi_control_in_content    U+202A..U+202E (embeddings, overrides) and
//                              U+2066..U+2069 (isolates), anywhere.
//   invisible_char_in_content  U+200B (zero width space), U+200E/U+200F/U+061C
//                              (direction marks), U+2028/U+2029 (line and
//                              paragraph separators: one line to a compiler,
//                              two in some viewers), U+2060..U+2064 (word
//                              joiner, invisible operators), U+FEFF except as
//                              the first character (a BOM), and U+200C/U+200D
//                              (zero width non-joiner/joiner) except between
//                              two non-ASCII characters, where they are text:
//                              Persian and Indic words, emoji sequences.
// Any string that needs one of these can spell it as an escape ("\u200f").
// Paths get the same two rules with no exception (a path never needs them).
// Everything else non-ASCII passes: identifiers, strings and comments in any
// script.
#include "contract/patch_contract.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "util/digest.h"
#include "util/strict_json.h"
#include "contract/suspicious_code.h"
#include "util/utf8.h"

namespace lazyagent {
namespace {

// Raw text bound (max_patch_text_bytes): content escaped as \u00XX is 6 times
// longer, so no conforming patch comes near it; bigger input is refused before
// parsing. It also bounds the reader's memory (tens of bytes per input byte at
// worst). At least 256 KiB, so the default limits keep their old bound.
constexpr std::size_t kMinPatchTextBytes = 256 * 1024;
// Paths shown in messages are cut here (a path is not bounded by max_bytes).
constexpr std::size_t kMaxShownPathBytes = 256;

// ---- display: messages are one line with no raw control bytes ------------------

// U+2028/U+2029 end a line in some viewers, so messages show them escaped,
// like the format controls.
bool is_line_separator(long cp) { return cp == 0x2028 || cp == 0x2029; }

// C0 and DEL as \xNN, C1 and format controls as \u{NN}, invalid bytes as \xNN,
// '\' as "\\" (so a literal "\x01" in a path cannot pass for an escape).
std::string shown(std::string_view s, std::size_t max_bytes = kMaxShownPathBytes) {
  std::string out;
  for (std::size_t i = 0, len = 1; i < s.size(); i += len) {
    if (out.size() >= max_bytes) return out + "...";
    const long cp = decode_utf8(s, i, len);
    if (cp < 0 || cp < 0x20 || cp == 0x7f) {
      out += hex_byte(static_cast<unsigned char>(s[i]));
    } else if (is_control_char(cp) || is_format_control(cp) || is_line_separator(cp)) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "\\u{%lx}", cp);
      out += buf;
    } else if (cp == '\\') {
      out += "\\\\";
    } else {
      out.append(s.substr(i, len));
    }
  }
  return out;
}

std::string quote_path(std::string_view path) { return "'" + shown(path) + "'"; }

// ---- the rules --------------------------------------------------------------------

Finding finding(const char* code, std::string_view path, std::string message) {
  return Finding{code, path.empty() ? std::string() : shown(path), std::move(message)};
}

std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0, len = 1; i < s.size(); i += len) {
    if (decode_utf8(s, i, len) < 0) return i;
  }
  return std::string_view::npos;
}

std::string invalid_utf8_detail(std::string_view s, std::size_t at) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const bool surrogate =
      at + 2 < s.size() && b(at) == 0xed && b(at + 1) >= 0xa0 && (b(at + 2) & 0xc0) == 0x80;
  return " is not valid UTF-8 at byte " + std::to_string(at) +
         (surrogate ? " (an unpaired UTF-16 surrogate)." : ".");
}


// ---- text that reads differently from what runs -----------------------------------

std::string hex4(long cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04lx", cp);
  return buf;
}

// "U+202E (RIGHT-TO-LEFT OVERRIDE)"
std::string code_point_label(long cp) {
  std::string hex = hex4(cp);
  for (char& ch : hex) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::string name = format_char_name(cp);
  return "U+" + hex + (name.empty() ? "" : " (" + name + ")");
}

long next_code_point(std::string_view s, std::size_t at) {
  std::size_t len = 1;
  return at < s.size() ? decode_utf8(s, at, len) : -1;
}

// A joiner is text between two non-ASCII characters that are not themselves
// hidden (a Persian word, an emoji sequence); anywhere else it hides.
bool joins_text(long prev, long next) {
  auto text = [](long cp) { return cp >= 0x80 && !is_format_control(cp) && !is_bidi_control(cp); };
  return text(prev) && text(next);
}

// The invisible_char_in_content rule for the code point at byte `at`.
bool is_invisible_in_content(long cp, std::size_t at, long prev, long next) {
  if (cp == 0xfeff) return at != 0;  // a BOM only as the first character
  if (cp == 0x200c || cp == 0x200d) return !joins_text(prev, next);
  return cp == 0x2028 || cp == 0x2029 || (is_format_control(cp) && !is_bidi_control(cp));
}

// Occurrences of one rule in one file: the first, its position, the lines.
struct HiddenTally {
  std::size_t count = 0;
  long first_cp = 0;
  std::size_t first_line = 0, first_column = 0;
  std::vector<std::size_t> lines;  // distinct, at most kShownLines
  static constexpr std::size_t kShownLines = 8;
  void add(long cp, std::size_t line, std::size_t column) {
    if (count++ == 0) first_cp = cp, first_line = line, first_column = column;
    if ((lines.empty() || lines.back() != line) && lines.size() < kShownLines + 1) lines.push_back(line);
  }
};

Finding hidden_finding(const char* code, const std::string& path, const HiddenTally& t,
                       const std::string& one, const std::string& many, const std::string& why) {
  const std::string where = code_point_label(t.first_cp) + " at line " + std::to_string(t.first_line) +
                            ", column " + std::to_string(t.first_column);
  std::string text = "content of " + quote_path(path) + " contains ";
  if (t.count == 1) {
    text += one + " " + where;
  } else {
    text += std::to_string(t.count) + " " + many + ", the first " + where;
    if (t.lines.size() > 1) {
      text += " (on lines ";
      for (std::size_t i = 0; i < t.lines.size() && i < HiddenTally::kShownLines; ++i)
        text += (i ? ", " : "") + std::to_string(t.lines[i]);
      text += t.lines.size() > HiddenTally::kShownLines ? ", ...)" : ")";
    }
  }
  Finding f = finding(code, path, text + ": " + why + ".");
  f.line = t.first_line;
  return f;
}

// Per-file and patch-level rules; remembers paths seen for duplicate_path.
class FileRules {
 public:
  explicit FileRules(const ContractLimits& limits) : limits_(clamp_to_caps(limits)) {}

  void check(const PatchFile& f, std::size_t index, std::vector<Finding>* out) {
    std::vector<Finding> path_findings = check_patch_path(f.path);
    out->insert(out->end(), path_findings.begin(), path_findings.end());
    const auto [first, inserted] = seen_.emplace(f.path, index);
    if (!inserted)
      out->push_back(finding(reason::kDuplicatePath, f.path,
                             "path " + quote_path(f.path) + " appears more than once (first as files[" +
                                 std::to_string(first->second) + "])."));
    if (!f.path.empty() && !path_on_allowlist(f.path, limits_.allow)) out->push_back(not_allowed(f.path));
    check_content(f, out);
    check_hidden_text(f, out);
    total_bytes_ += f.content.size();
  }

  void finish(std::size_t file_count, std::vector<Finding>* out) const {
    if (file_count == 0) out->push_back(finding(reason::kNoFiles, "", "patch has no files."));
    if (file_count > limits_.max_files)
      out->push_back(finding(reason::kTooManyFiles, "",
                             "patch has " + std::to_string(file_count) + " files; the limit is " +
                                 std::to_string(limits_.max_files) +
                                 cap_hint("patch.max_files", kMaxPatchFilesCap) + "."));
    if (total_bytes_ > limits_.max_bytes)
      out->push_back(finding(reason::kTooLarge, "",
                             "patch content totals " + std::to_string(total_bytes_) +
                                 " bytes; the limit is " + std::to_string(limits_.max_bytes) +
                                 cap_hint("patch.max_bytes", kMaxPatchBytesCap) + "."));
  }

 private:
  Finding not_allowed(const std::string& path) const {
    std::string list;
    for (const std::string& a : limits_.allow) list += (list.empty() ? "" : ", ") + shown(a);
    return finding(reason::kNotAllowed, path,
                   "path " + quote_path(path) + " is not allowed" +
                       (list.empty() ? "; the allowlist is empty." : "; allowed: " + list + "."));
  }

  void check_content(const PatchFile& f, std::vector<Finding>* out) const {
    const std::string_view c = f.content;
    const std::size_t bad = first_invalid_utf8(c);
    if (bad != std::string_view::npos)
      out->push_back(finding(reason::kInvalidUtf8, f.path,
                             "content of " + quote_path(f.path) + invalid_utf8_detail(c, bad)));
    std::size_t count = 0, first_at = 0, first_len = 1;
    for (std::size_t i = 0, len = 1; i < c.size(); i += len) {
      const long cp = decode_utf8(c, i, len);
      if (cp < 0 || cp == '\t' || cp == '\n' || cp == '\r' || !is_control_char(cp)) continue;
      if (count++ == 0) first_at = i, first_len = len;
    }
    if (count == 0) return;
    const std::string what = shown(c.substr(first_at, first_len));
    out->push_back(finding(reason::kControlCharInContent, f.path,
                           "content of " + quote_path(f.path) +
                               (count == 1 ? " contains control character " + what
                                           : " contains " + std::to_string(count) +
                                                 " control characters, the first " + what) +
                               " at byte " + std::to_string(first_at) + "."));
  }

  // bidi_control_in_content and invisible_char_in_content (see the top).
  void check_hidden_text(const PatchFile& f, std::vector<Finding>* out) const {
    const std::string_view c = f.content;
    HiddenTally bidi, invisible;
    std::size_t line = 1, column = 0;
    const auto file_line = [&](std::size_t l) { return l - 1 < f.lines.size() ? f.lines[l - 1] : l; };
    long prev = -1;
    for (std::size_t i = 0, len = 1; i < c.size(); i += len) {
      const long cp = decode_utf8(c, i, len);
      ++column;
      if (cp == '\n') {
        ++line, column = 0;
      } else if (is_bidi_control(cp)) {
        bidi.add(cp, file_line(line), column);
      } else if (is_invisible_in_content(cp, i, prev, next_code_point(c, i + len))) {
        invisible.add(cp, file_line(line), column);
      }
      prev = cp;
    }
    if (bidi.count > 0)
      out->push_back(hidden_finding(reason::kBidiControlInContent, f.path, bidi, "bidirectional control",
                                    "bidirectional controls",
                                    "they make code display in an order other than the one it runs in "
                                    "(Trojan Source, CVE-2021-42574)"));
    if (invisible.count > 0)
      out->push_back(hidden_finding(reason::kInvisibleCharInContent, f.path, invisible, "invisible character",
                                    "invisible characters",
                                    "code can read differently from what runs; a string that needs one "
                                    "can spell it as an escape (\\u" + hex4(invisible.first_cp) + ")"));
  }

  ContractLimits limits_;
  std::map<std::string, std::size_t> seen_;
  std::size_t total_bytes_ = 0;
};

// Shape of one files[] entry. Returns the file when path and content are both
// strings (even if the entry has other shape problems: every rule still runs).
bool read_entry(const JsonValue& entry, std::size_t index, PatchFile* file,
                std::vector<Finding>* out) {
  const std::string where = "files[" + std::to_string(index) + "]";
  if (entry.kind != JsonValue::Kind::kObject) {
    out->push_back(finding(reason::kBadShape, "",
                           where + " must be an object, got " + kind_name(entry.kind) + "."));
    return false;
  }
  const JsonValue* fields[2] = {nullptr, nullptr};  // path, content
  const char* names[2] = {"path", "content"};
  std::vector<std::string> problems;
  for (const JsonMember& m : entry.members) {
    const int k = m.key == "path" ? 0 : m.key == "content" ? 1 : -1;
    if (k < 0) {
      problems.push_back(where + " has unknown key " + quote_path(m.key) +
                         " (allowed: path, content).");
    } else if (fields[k] != nullptr) {
      problems.push_back(where + " has the key '" + names[k] + "' more than once.");
    } else {
      fields[k] = &m.value;
    }
  }
  for (int k = 0; k < 2; ++k) {
    if (fields[k] == nullptr) {
      problems.push_back(where + " has no '" + names[k] + "'.");
    } else if (fields[k]->kind != JsonValue::Kind::kString) {
      problems.push_back(where + "." + names[k] + " must be a string, got " +
                         kind_name(fields[k]->kind) + ".");
    }
  }
  const bool has_path = fields[0] != nullptr && fields[0]->kind == JsonValue::Kind::kString;
  for (std::string& p : problems)
    out->push_back(finding(reason::kBadShape, has_path ? fields[0]->text : "", std::move(p)));
  if (!has_path || fields[1] == nullptr || fields[1]->kind != JsonValue::Kind::kString)
    return false;
  *file = PatchFile{fields[0]->text, fields[1]->text};
  return true;
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

}  // namespace

ContractLimits clamp_to_caps(const ContractLimits& limits) {
  ContractLimits out = limits;
  out.max_files = std::min(out.max_files, kMaxPatchFilesCap);
  out.max_bytes = std::min(out.max_bytes, kMaxPatchBytesCap);
  out.max_diff_bytes = std::min(out.max_diff_bytes, kMaxDiffBytesCap);
  out.max_changed_lines = std::min(out.max_changed_lines, kMaxChangedLinesCap);
  return out;
}

std::string cap_hint(const char* key, std::size_t hard_cap) {
  return std::string(" (") + key + " in the config, which can be raised up to " + std::to_string(hard_cap) + ")";
}

std::size_t max_patch_text_bytes(const ContractLimits& limits) {
  const ContractLimits l = clamp_to_caps(limits);
  return std::max({kMinPatchTextBytes, 6 * l.max_bytes + 64 * 1024, l.max_diff_bytes});
}

bool path_on_allowlist(std::string_view path, const std::vector<std::string>& allow) {
  return std::any_of(allow.begin(), allow.end(), [&](const std::string& a) {
    if (path == a) return true;
    return !a.empty() && a.back() == '/' && path.size() > a.size() && path.substr(0, a.size()) == a;
  });
}

std::string display_path(std::string_view path) { return shown(path); }

bool is_valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

std::vector<Finding> check_patch_path(std::string_view path) {
  std::vector<Finding> out;
  const std::string q = quote_path(path);
  if (path.empty()) {
    out.push_back(finding(reason::kEmptyPath, path, "path is empty."));
    return out;
  }
  const std::size_t bad = first_invalid_utf8(path);
  if (bad != std::string_view::npos)
    out.push_back(
        finding(reason::kInvalidUtf8, path, "path " + q + invalid_utf8_detail(path, bad)));
  const bool absolute = path.front() == '/';
  if (absolute)
    out.push_back(finding(reason::kAbsolutePath, path,
                          "path " + q + " is absolute; paths must be relative to the seed."));
  // Components between '/'; the leading empty one of an absolute path is reported above.
  for (std::size_t start = absolute ? 1 : 0;;) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      out.push_back(finding(reason::kDotComponent, path,
                            "path " + q +
                                (part.empty() ? " has an empty component ('//' or a trailing '/')."
                                              : " has a '" + std::string(part) + "' component.")));
      break;
    }
    if (end == path.size()) break;
    start = end + 1;
  }
  if (path.find('\\') != std::string_view::npos)
    out.push_back(finding(reason::kBackslashInPath, path,
                          "path " + q + " contains a backslash; separate components with '/'."));
  for (std::size_t i = 0, len = 1; i < path.size(); i += len) {
    if (is_control_char(decode_utf8(path, i, len))) {
      out.push_back(
          finding(reason::kControlCharInPath, path,
                  "path " + q + " contains control character " + shown(path.substr(i, len)) + "."));
      break;
    }
  }
  // Each rule once, naming its first code point.
  long bidi = -1, invisible = -1;
  for (std::size_t i = 0, len = 1; i < path.size(); i += len) {
    const long cp = decode_utf8(path, i, len);
    if (is_bidi_control(cp)) {
      if (bidi < 0) bidi = cp;
    } else if (is_format_control(cp) || is_line_separator(cp)) {
      if (invisible < 0) invisible = cp;
    }
  }
  if (bidi >= 0)
    out.push_back(finding(reason::kBidiControlInPath, path,
                          "path " + q + " contains bidirectional control " + code_point_label(bidi) +
                              ": it would display in an order other than its own."));
  if (invisible >= 0)
    out.push_back(finding(reason::kInvisibleCharInPath, path,
                          "path " + q + " contains invisible character " + code_point_label(invisible) + "."));
  return out;
}

std::vector<Finding> validate_patch(const Patch& patch, const ContractLimits& limits) {
  std::vector<Finding> out;
  FileRules rules(limits);
  for (std::size_t i = 0; i < patch.files.size(); ++i) rules.check(patch.files[i], i, &out);
  rules.finish(patch.files.size(), &out);
  if (limits.refuse_suspicious) {
    const std::vector<Finding> s = suspicious_findings(patch);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

std::string contract_display(std::string_view s) { return shown(s); }

nlohmann::json findings_to_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Finding& f : findings) {
    nlohmann::json j = {{"code", f.code}, {"path", f.path}, {"message", f.message}};
    if (f.line > 0) j["line"] = f.line;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<Finding> findings_from_json(const nlohmann::json& j) {
  std::vector<Finding> out;
  if (!j.is_array()) return out;
  for (const auto& f : j) {
    if (!f.is_object()) continue;
    auto text = [&](const char* key) {
      auto it = f.find(key);
      return it != f.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto line = f.find("line");
    out.push_back({text("code"), text("path"), text("message"),
                   line != f.end() && line->is_number_unsigned() ? line->get<std::size_t>() : 0});
  }
  return out;
}

ContractResult validate_patch_json(std::string_view json_text, const ContractLimits& limits) {
  ContractResult r;
  auto add = [&](const char* code, std::string message) {
    r.findings.push_back(finding(code, "", std::move(message)));
  };
  auto refuse = [&](const char* code, std::string message) {
    add(code, std::move(message));
    return r;
  };
  try {
    if (json_text.size() > max_patch_text_bytes(limits))
      return refuse(reason::kTooLarge, "patch text is " + std::to_string(json_text.size()) +
                                           " bytes; the limit is " +
                                           std::to_string(max_patch_text_bytes(limits)) +
                                           " (6 times patch.max_bytes, at least 262144).");
    JsonValue doc;
    StrictJsonError error;
    if (!read_strict_json(json_text, &doc, &error))
      return refuse(error.too_deep ? reason::kBadShape : reason::kMalformedJson,
                    "patch is not valid JSON: " + error.message + ".");
    if (doc.kind != JsonValue::Kind::kObject)
      return refuse(reason::kBadShape, std::string("patch must be a JSON object with a 'files' "
                                                   "array, got ") +
                                           kind_name(doc.kind) + ".");
    const JsonValue* files = nullptr;
    for (const JsonMember& m : doc.members) {
      if (m.key != "files") {
        add(reason::kBadShape, "patch has unknown key " + quote_path(m.key) + " (allowed: files).");
      } else if (files != nullptr) {
        add(reason::kBadShape, "patch has the key 'files' more than once.");
      } else {
        files = &m.value;
      }
    }
    if (files == nullptr) return refuse(reason::kBadShape, "patch has no 'files' array.");
    if (files->kind != JsonValue::Kind::kArray)
      return refuse(reason::kBadShape,
                    std::string("'files' must be an array, got ") + kind_name(files->kind) + ".");
    FileRules rules(limits);
    for (std::size_t i = 0; i < files->items.size(); ++i) {
      PatchFile f;
      if (!read_entry(files->items[i], i, &f, &r.findings)) continue;
      rules.check(f, i, &r.findings);
      r.patch.files.push_back(std::move(f));
    }
    rules.finish(files->items.size(), &r.findings);
    r.suspicious = suspicious_findings(r.patch);
    if (limits.refuse_suspicious) r.findings.insert(r.findings.end(), r.suspicious.begin(), r.suspicious.end());
    return r;
  } catch (const std::exception& e) {  // std::bad_alloc is the only one possible
    r.findings.clear();
    return refuse(reason::kMalformedJson,
                  std::string("patch could not be read: ") + e.what() + ".");
  }
}

std::string patch_to_json(const Patch& patch) {
  std::string out = "{\"files\":[";
  for (std::size_t i = 0; i < patch.files.size(); ++i) {
    out += i == 0 ? "{\"path\":" : ",{\"path\":";
    append_json_string(out, patch.files[i].path);
    out += ",\"content\":";
    append_json_string(out, patch.files[i].content);
    out += "}";
  }
  return out + "]}";
}

std::string patch_sha256(const Patch& patch) { return sha256_hex(patch_to_json(patch)); }

ContractLimits contract_limits(const Config& config) {
  ContractLimits limits;
  limits.allow = config.allow;
  limits.max_files = static_cast<std::size_t>(config.patch.max_files);
  limits.max_bytes = static_cast<std::size_t>(config.patch.max_bytes);
  limits.max_diff_bytes = static_cast<std::size_t>(config.patch.max_diff_bytes);
  limits.max_changed_lines = static_cast<std::size_t>(config.patch.max_changed_lines);
  limits.refuse_suspicious = config.patch.suspicious == "refuse";
  return limits;
}

}  // namespace lazyagent
