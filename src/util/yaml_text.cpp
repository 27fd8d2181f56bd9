#include "util/yaml_text.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "util/utf8.h"

namespace lazyagent {

using nlohmann::ordered_json;

namespace {

// Characters any YAML 1.1 or 1.2 reader keeps as they are inside a scalar:
// the printable set of YAML 1.2 minus what YAML 1.1 readers (go-yaml) treat
// as line breaks (NEL, LS, PS), minus the BOM and noncharacters.
bool yaml_keeps(long cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp < 0x20 || cp == 0x7f) return false;
  if (cp < 0x7f) return true;
  if (cp < 0xa0) return false;  // C1 controls, NEL
  if (cp == 0x2028 || cp == 0x2029 || cp == 0xfeff) return false;
  if (cp >= 0xfdd0 && cp <= 0xfdef) return false;
  if ((cp & 0xfffe) == 0xfffe) return false;
  return true;
}

// Words that YAML 1.1 readers take as booleans or null when plain.
bool yaml11_keyword(std::string_view s) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  static const std::set<std::string> words = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
  return words.count(lower) > 0;
}

// Plain only for a letter or '/' followed by [A-Za-z0-9._/-]: no reader can
// take that for a number, timestamp, boolean, null, alias, tag or indicator.
bool plain_ok(std::string_view s) {
  if (s.empty()) return false;
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(s[0]) && s[0] != '/') return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '/' && c != '-') return false;
  }
  return !yaml11_keyword(s);
}

// A literal block `|` (clip chomping, indentation detected from the first
// line) reads back exactly when the text ends in exactly one newline, no
// line ends in blanks, the first line is not indented or empty, and no CR.
bool literal_ok(std::string_view s) {
  if (s.size() < 2 || s.back() != '\n' || s[s.size() - 2] == '\n') return false;
  if (s[0] == ' ' || s[0] == '\t' || s[0] == '\n') return false;
  if (s.find('\r') != std::string_view::npos || !yaml_safe_text(s)) return false;
  for (std::size_t nl = s.find('\n'); nl != std::string_view::npos; nl = s.find('\n', nl + 1)) {
    if (nl > 0 && (s[nl - 1] == ' ' || s[nl - 1] == '\t')) return false;
  }
  return true;
}

// What a double-quoted scalar cannot get back: invalid UTF-8 (yaml-cpp would
// mangle it) and DEL (yaml-cpp writes it raw; go-yaml refuses it raw).
std::optional<std::string> unquotable(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const long cp = decode_utf8(s, i, len);
    if (cp < 0) return "is not valid UTF-8";
    if (cp == 0x7f) return "contains DEL (U+007F), which YAML cannot carry";
    i += len;
  }
  return std::nullopt;
}

std::optional<Error> emit_string(YAML::Emitter& e, const std::string& s, const std::string& where,
                                 bool is_key = false) {
  if (plain_ok(s)) {
    e << s;
  } else if (!is_key && literal_ok(s)) {  // a block scalar cannot be an implicit key
    e << YAML::Literal << s;
  } else if (auto why = unquotable(s)) {
    return usage_error("manifest value " + where + " " + *why);
  } else {
    e << YAML::EscapeNonAscii << YAML::DoubleQuoted << s;
  }
  return std::nullopt;
}

std::optional<Error> emit(YAML::Emitter& e, const ordered_json& v, const std::string& where) {
  switch (v.type()) {
    case ordered_json::value_t::object:
      if (v.empty()) {  // {} on the line of its key or dash
        e << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return std::nullopt;
      }
      e << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        e << YAML::Key;
        const std::string at = where.empty() ? k : where + "." + k;
        if (auto err = emit_string(e, k, at + " (key)", true)) return err;
        e << YAML::Value;
        if (auto err = emit(e, item, at)) return err;
      }
      e << YAML::EndMap;
      return std::nullopt;
    case ordered_json::value_t::array:
      if (v.empty()) {  // [] likewise
        e << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return std::nullopt;
      }
      e << YAML::BeginSeq;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (auto err = emit(e, v[i], where + "[" + std::to_string(i) + "]")) return err;
      }
      e << YAML::EndSeq;
      return std::nullopt;
    case ordered_json::value_t::string:
      return emit_string(e, v.get<std::string>(), where);
    case ordered_json::value_t::boolean:
      e << v.get<bool>();
      return std::nullopt;
    case ordered_json::value_t::number_integer:
      e << v.get<std::int64_t>();
      return std::nullopt;
    case ordered_json::value_t::number_unsigned:
      e << v.get<std::uint64_t>();
      return std::nullopt;
    case ordered_json::value_t::number_float:
      e << v.dump();  // nlohmann's shortest round-trip form ("1.0", "0.5"): a YAML float
      return std::nullopt;
    default:  // null never appears in our documents: refuse, do not guess
      return usage_error("manifest value " + where + " has an unsupported type (" + v.type_name() + ")");
  }
}

}  // namespace

bool yaml_safe_text(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const long cp = decode_utf8(s, i, len);
    if (cp < 0 || !yaml_keeps(cp)) return false;
    i += len;
  }
  return true;
}

Result<std::string> to_yaml(const ordered_json& doc) {
  YAML::Emitter e;
  e.SetIndent(2);
  e.SetSeqFormat(YAML::Block);
  e.SetMapFormat(YAML::Block);
  if (auto err = emit(e, doc, "")) return *err;
  if (!e.good()) return usage_error("writing YAML: " + e.GetLastError());
  std::string text = e.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';  // a literal block already ends in one
  return text;
}

std::string yaml_comment(const std::string& text) {
  std::ostringstream o;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) o << (line.empty() ? "#" : "# " + line) << "\n";
  return o.str();
}

}  // namespace lazyagent
