#include "export_k8s_configmap.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "utf8.h"

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
    default:  // floats and null never appear in our manifests: refuse, do not guess
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

std::string base64_encode(std::string_view bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    out += {abc[(n >> 18) & 63], abc[(n >> 12) & 63], abc[(n >> 6) & 63], abc[n & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    out += {abc[(n >> 18) & 63], abc[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {abc[(n >> 18) & 63], abc[(n >> 12) & 63], abc[(n >> 6) & 63], '='};
  }
  return out;
}

Result<std::vector<K8sFile>> seed_files(const SeedSnapshot& seed, const std::optional<Patch>& patch,
                                        std::vector<std::string>* empty_dirs) {
  if (patch) {
    const auto findings = check_patch_against_seed(seed, *patch);
    if (!findings.empty()) {
      std::string msg = "the patch does not fit the seed:";
      for (const auto& f : findings) msg += " " + f.code + " (" + f.path + ")";
      return Error{ErrorKind::kPatch, msg};
    }
  }
  std::map<std::string, const PatchFile*> patched;
  if (patch) {
    for (const auto& f : patch->files) patched[f.path] = &f;
  }
  std::vector<K8sFile> out;
  std::vector<std::string> symlinks, dirs;
  for (const auto& e : seed.entries) {
    if (e.kind == SeedEntry::Kind::kSymlink) {
      symlinks.push_back(e.path);
    } else if (e.kind == SeedEntry::Kind::kDir) {
      dirs.push_back(e.path);
    } else if (auto it = patched.find(e.path); it != patched.end()) {
      out.push_back({e.path, it->second->content, (e.mode & 0111) ? 0755u : 0644u});
      patched.erase(it);
    } else {
      out.push_back({e.path, e.data, e.mode & 0777});
    }
  }
  for (const auto& [path, f] : patched) out.push_back({path, f->content, 0644});  // new files
  if (!symlinks.empty()) {
    std::string msg = "the seed has symlinks, which a ConfigMap cannot carry:";
    for (const auto& s : symlinks) msg += " " + s;
    return usage_error(msg);
  }
  std::sort(out.begin(), out.end(), [](const K8sFile& a, const K8sFile& b) { return a.path < b.path; });
  for (const auto& f : out) {
    if (f.path.rfind("..", 0) == 0) {  // the API server refuses such item paths
      return usage_error("seed path " + f.path + ": Kubernetes refuses volume item paths starting with '..'");
    }
  }
  if (empty_dirs) {
    for (const auto& d : dirs) {
      const bool holds_file = std::any_of(out.begin(), out.end(), [&](const K8sFile& f) {
        return f.path.size() > d.size() && f.path.compare(0, d.size(), d) == 0 && f.path[d.size()] == '/';
      });
      if (!holds_file) empty_dirs->push_back(d);
    }
  }
  return out;
}

Result<FileConfigMap> files_configmap(const ordered_json& metadata, const std::vector<K8sFile>& files) {
  FileConfigMap cm;
  ordered_json data = ordered_json::object(), binary = ordered_json::object();
  cm.items = ordered_json::array();
  const int width = files.size() > 10000 ? static_cast<int>(std::to_string(files.size() - 1).size()) : 4;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const K8sFile& f = files[i];
    char key[32];
    std::snprintf(key, sizeof key, "f%0*zu", width, i);
    if (yaml_safe_text(f.content)) {
      data[key] = f.content;
    } else {
      binary[key] = base64_encode(f.content);
      ++cm.binary_files;
    }
    cm.bytes += f.content.size();
    ordered_json item = {{"key", key}, {"path", f.path}};
    if ((f.mode & 0777) != kConfigMapDefaultMode) item["mode"] = f.mode & 0777;
    cm.items.push_back(item);
  }
  if (cm.bytes > kConfigMapMaxBytes) {
    return usage_error("the seed is " + std::to_string(cm.bytes) + " bytes, more than a ConfigMap holds (" +
                       std::to_string(kConfigMapMaxBytes) + " bytes in total)");
  }
  cm.manifest = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", metadata}};
  if (!data.empty()) cm.manifest["data"] = data;
  if (!binary.empty()) cm.manifest["binaryData"] = binary;
  return cm;
}

Result<std::string> manifest_yaml(const ordered_json& doc) {
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

}  // namespace lazyagent
