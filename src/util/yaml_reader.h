// A YAML reader for typed settings (the config, config.h): a document is
// read against a schema of fields, every problem collected with its key path
// ("config/lazyagent.yaml: limits.memory_mib: expected a positive integer,
// got 'lots'"), unknown and duplicate keys refused (podman ignores misspelled
// settings silently, ARCHITECTURE section 5: we do not). A schema is a list
// of {key, Read}; each Read checks one value and stores it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "util/ip_address.h"
#include "util/path_glob.h"
#include "util/result.h"

namespace lazyagent {

// Text from the file, made safe for a one-line message: C0 and DEL as \xNN, cut at 80 bytes.
std::string yaml_printable(const std::string& text);
// A value as a user would recognise it in a message ("an empty list", "'x'").
std::string yaml_describe(const YAML::Node& n);
// "parent.key" ("key" at the top).
std::string yaml_join_key(const std::string& parent, const std::string& key);

// The number of YAML documents in `text` (`name` for messages). Invalid YAML
// is a kUsage error naming line and column.
Result<std::size_t> count_yaml_documents(const std::string& text, const std::string& name);

// Reads one document against a schema, collecting every error.
class YamlReader {
 public:
  using Read = std::function<void(const YAML::Node&, const std::string& key_path)>;
  struct Field {
    const char* key;
    Read read;
  };

  explicit YamlReader(std::string source) : source_(std::move(source)) {}

  const std::vector<std::string>& errors() const { return errors_; }

  void error(const std::string& key_path, const std::string& what) {
    errors_.push_back(source_ + ": " + (key_path.empty() ? "top level" : key_path) + ": " + what);
  }

  // A mapping whose keys must all appear in `fields`. Absent or empty (null)
  // means "all defaults", so a section with every line commented out is fine.
  void mapping(const YAML::Node& node, const std::string& path, const std::vector<Field>& fields) {
    if (node.IsNull()) return;
    if (!node.IsMap()) return error(path, "expected a mapping, got " + yaml_describe(node));
    std::set<std::string> seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) {
        error(path, "keys must be plain names, got " + yaml_describe(entry.first));
        continue;
      }
      const std::string key = entry.first.Scalar();
      const std::string key_path = yaml_join_key(path, yaml_printable(key));
      const Field* field = nullptr;
      std::string valid;
      for (const Field& f : fields) {
        valid += (valid.empty() ? "" : ", ") + std::string(f.key);
        if (key == f.key) field = &f;
      }
      if (field == nullptr) {
        error(key_path, "unknown key (valid keys: " + valid + ")");
      } else if (!seen.insert(key).second) {
        error(key_path, "duplicate key");
      } else {
        field->read(entry.second, key_path);
      }
    }
  }

  Read nested(std::vector<Field> fields) {
    return [this, fields = std::move(fields)](const YAML::Node& n, const std::string& p) {
      mapping(n, p, fields);
    };
  }

  // A non-empty string. `valid` (optional) is the stricter rule, `expected`
  // says it in words: "expected <expected>, got '<value>'".
  Read string(std::string* out, bool (*valid)(const std::string&) = nullptr,
              const char* expected = "a non-empty string") {
    return [=, this](const YAML::Node& n, const std::string& p) {
      if (!n.IsScalar() || n.Scalar().empty() || (valid != nullptr && !valid(n.Scalar())))
        return error(p, std::string("expected ") + expected + ", got " + yaml_describe(n));
      *out = n.Scalar();
    };
  }

  // A decimal integer in [min, max]. `cap` names a hard cap (patch limits),
  // which gets its own message: the user tried to raise something they cannot.
  Read integer(std::int64_t* out, std::int64_t min, std::int64_t max, bool cap = false) {
    return [=, this](const YAML::Node& n, const std::string& p) {
      std::int64_t v = 0;
      const std::string s = n.IsScalar() ? n.Scalar() : std::string();
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      const bool digits_only = !s.empty() && end == s.data() + s.size();
      if (!n.IsScalar() || !digits_only ||
          (ec != std::errc() && ec != std::errc::result_out_of_range))
        return error(p, "expected a positive integer, got " + yaml_describe(n));
      if (cap && (ec != std::errc() || v > max))
        return error(p, "cannot be raised past the cap of " + std::to_string(max) + ", got " + s);
      if (ec != std::errc() || v < min || v > max)
        return error(p, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                            ", got " + s);
      *out = v;
    };
  }

  // true or false (YAML 1.2 core spellings only).
  Read boolean(bool* out) {
    return [=, this](const YAML::Node& n, const std::string& p) {
      const std::string s = n.IsScalar() ? n.Scalar() : std::string();
      if (s != "true" && s != "false") return error(p, "expected true or false, got " + yaml_describe(n));
      *out = s == "true";
    };
  }

  // Records the key path in `set` once `inner` has read the value.
  Read marked(std::vector<std::string>* set, Read inner) {
    return [set, inner = std::move(inner)](const YAML::Node& n, const std::string& p) {
      inner(n, p);
      set->push_back(p);
    };
  }

  Read number(double* out, double min, double max, const char* range_text) {
    return [=, this](const YAML::Node& n, const std::string& p) {
      const std::string s = n.IsScalar() ? n.Scalar() : std::string();
      const bool decimal =
          !s.empty() && s.find_first_not_of("0123456789.eE+-") == std::string::npos;
      char* end = nullptr;
      errno = 0;
      const double v = decimal ? std::strtod(s.c_str(), &end) : NAN;
      if (!decimal || end != s.c_str() + s.size() || !std::isfinite(v) || errno == ERANGE)
        return error(p, "expected a positive number, got " + yaml_describe(n));
      if (v < min || v > max) return error(p, std::string("must be ") + range_text + ", got " + s);
      *out = v;
    };
  }

  // A list of "HOST:PORT" (an IP address or a name; IPv6 in brackets).
  Read host_port_list(std::vector<std::string>* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence()) return error(p, "expected a list of HOST:PORT, got " + yaml_describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const std::string v = n[i].IsScalar() ? n[i].Scalar() : std::string();
        if (!is_host_port(v)) {
          error(item_path, "expected HOST:PORT (an IPv6 address in brackets, [fd00::1]:443; port 1-65535), got " +
                               yaml_describe(n[i]));
          continue;
        }
        entries.push_back(v);
      }
      *out = std::move(entries);
    };
  }

  // A list of glob patterns (path_glob.h), each checked.
  Read glob_list(std::vector<std::string>* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence()) return error(p, "expected a list of glob patterns, got " + yaml_describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(item_path, "expected a non-empty glob pattern, got " + yaml_describe(item));
          continue;
        }
        if (const std::string why = glob_problem(item.Scalar()); !why.empty()) {
          error(item_path, why);
          continue;
        }
        entries.push_back(item.Scalar());
      }
      *out = std::move(entries);
    };
  }

  // A list of non-empty paths (mcp.seeds).
  Read path_list(std::vector<std::string>* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence()) return error(p, "expected a list of directories, got " + yaml_describe(n));
      std::vector<std::string> items;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(p + "[" + std::to_string(i) + "]", "expected a non-empty directory, got " + yaml_describe(item));
          continue;
        }
        items.push_back(item.Scalar());
      }
      *out = std::move(items);
    };
  }

  // A non-empty list of non-empty strings (shell commands).
  Read command_list(std::vector<std::string>* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence() || n.size() == 0)
        return error(p, "expected a non-empty list of commands, got " + yaml_describe(n));
      std::vector<std::string> items;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(p + "[" + std::to_string(i) + "]", "expected a non-empty command, got " + yaml_describe(item));
          continue;
        }
        items.push_back(item.Scalar());
      }
      *out = std::move(items);
    };
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

}  // namespace lazyagent
