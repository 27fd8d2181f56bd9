#include "yaml_text.h"

#include <sstream>

namespace lazyagent {

using nlohmann::ordered_json;

namespace {

std::string scalar(const ordered_json& v) {
  // dump() of a string is a JSON string literal: quotes, escapes for control
  // characters, UTF-8 kept as is (valid in YAML double-quoted scalars).
  return v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

bool plain_key(const std::string& k) {
  if (k.empty()) return false;
  const char c0 = k[0];
  if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_')) return false;
  for (char c : k) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '/' || c == '-';
    if (!ok) return false;
  }
  // Words YAML 1.1 readers (PyYAML, used by podman-compose) take as booleans or null.
  static const char* special[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
                                  "true", "True", "TRUE", "false", "False", "FALSE", "on", "On",
                                  "ON", "off", "Off", "OFF", "null", "Null", "NULL"};
  for (const char* s : special) {
    if (k == s) return false;
  }
  return true;
}

std::string key(const std::string& k) { return plain_key(k) ? k : scalar(ordered_json(k)); }

bool is_block(const ordered_json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void emit(std::ostringstream& o, const ordered_json& v, int indent);

// Writes `v` after "key:" or "-" on the current line.
void emit_value(std::ostringstream& o, const ordered_json& v, int indent) {
  if (!is_block(v)) {
    o << " " << (v.is_object() ? "{}" : v.is_array() ? "[]" : scalar(v)) << "\n";
    return;
  }
  o << "\n";
  emit(o, v, indent);
}

// `inline_first`: the first key goes on the current line (after "- ").
void emit_object(std::ostringstream& o, const ordered_json& v, int indent, bool inline_first) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  bool first = true;
  for (const auto& [k, item] : v.items()) {
    o << (first && inline_first ? "" : pad) << key(k) << ":";
    emit_value(o, item, indent + 2);
    first = false;
  }
}

void emit(std::ostringstream& o, const ordered_json& v, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (v.is_object()) {
    emit_object(o, v, indent, false);
  } else if (v.is_array()) {
    for (const auto& item : v) {
      if (item.is_object() && !item.empty()) {  // "- key: value" with the rest aligned
        o << pad << "- ";
        emit_object(o, item, indent + 2, true);
        continue;
      }
      o << pad << "-";
      emit_value(o, item, indent + 2);
    }
  } else {
    o << pad << scalar(v) << "\n";
  }
}

}  // namespace

std::string to_yaml(const ordered_json& doc) {
  std::ostringstream o;
  if (!is_block(doc)) {
    o << (doc.is_object() ? "{}" : doc.is_array() ? "[]" : scalar(doc)) << "\n";
    return o.str();
  }
  emit(o, doc, 0);
  return o.str();
}

std::string yaml_comment(const std::string& text) {
  std::ostringstream o;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) o << (line.empty() ? "#" : "# " + line) << "\n";
  return o.str();
}

}  // namespace lazyagent
