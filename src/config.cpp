// Config loading: YAML text -> Config, every key checked against one schema.
//
// The schema is written once, in parse_config(), as nested tables of
// {key, reader}. A key not in its table is an error naming the full key path
// and the valid keys; a value of the wrong type or out of range is an error
// naming the key path and the value. All errors are collected (one per line,
// each "<source>: <key.path>: <what is wrong>") so a user fixes them in one go.
// yaml-cpp exceptions are caught here and never leave this file.
//
// Ranges (also documented in config/lazyagent.yaml):
//   limits.memory_mib      6..65536    runc refuses a memory limit under 6 MB
//   limits.pids            1..65536
//   limits.cpus            0.01..256   the kernel's smallest CFS quota is 1 ms per 100 ms
//   limits.nofile, nproc   1..65536    the hosts lack CAP_SYS_RESOURCE to raise hard limits
//   limits.*_tmpfs_mib     1..16384
//   limits.log_bytes       4096..64 MiB
//   timeouts.test_seconds  1..86400
//   report                 auto (default): the runner's own report where the command is
//                          recognised (runner_driver.h), else the output; output: the
//                          output only; junit:PATH, PATH relative, no "..": the user's JUnit XML
//   patch.max_files        1..1000     default 3 (the origin guide's); the hard caps are
//   patch.max_bytes        1..4 MiB    default 12000   patch_contract.h's kMax*Cap
//   patch.max_diff_bytes   1..4 MiB    default 12000
//   patch.max_changed_lines 1..200000  default 1000
//   patch.suspicious       flag|refuse what suspicious findings do (suspicious_code.h)
//   seed.max_files         1..10^7     default 100000
//   seed.max_bytes         1..1 TiB    default 2 GiB
//   user_namespace.host_id 65536..4294901759, and host_id + size - 1 <= 4294967294
//   user_namespace.size    65536..16777216   covers the image's ids up to nobody (65534)
#include "config.h"

#include "policy/planner_egress.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>
#include <system_error>

#include "contract/egress_entry.h"
#include "contract/patch_contract.h"
#include "util/path_glob.h"

#ifndef LAZYAGENT_DATADIR
#define LAZYAGENT_DATADIR "/usr/local/share/lazyagent-oci"
#endif

namespace lazyagent {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxConfigFileBytes = 1024 * 1024;

// Text from the file, made safe for a one-line message: C0 and DEL as \xNN, cut at 80 bytes.
std::string printable(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (out.size() > 80) return out + "...";
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// A value as a user would recognise it in a message.
std::string describe(const YAML::Node& n) {
  if (n.IsNull()) return "nothing";
  if (n.IsSequence()) return n.size() == 0 ? "an empty list" : "a list";
  if (n.IsMap()) return n.size() == 0 ? "an empty mapping" : "a mapping";
  return "'" + printable(n.Scalar()) + "'";
}

std::string join_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

bool is_image_reference(const std::string& s);
constexpr const char* kImageText = "an image reference without spaces or control characters";
bool is_build_network(const std::string& s) { return s == "bridge" || s == "none"; }

// HOST:PORT: a name or IPv4 address, or an IPv6 address in brackets; port 1-65535.
bool is_host_port(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = s.substr(0, colon);
  const std::string port = s.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return false;
  } else if (host.empty() || host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
                                 std::string::npos) {
    return false;
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
  const long n = std::stol(port);
  return n >= 1 && n <= 65535;
}

// Reads one document against the schema, collecting every error.
class Reader {
 public:
  using Read = std::function<void(const YAML::Node&, const std::string& key_path)>;
  struct Field {
    const char* key;
    Read read;
  };

  explicit Reader(std::string source) : source_(std::move(source)) {}

  const std::vector<std::string>& errors() const { return errors_; }

  void error(const std::string& key_path, const std::string& what) {
    errors_.push_back(source_ + ": " + (key_path.empty() ? "top level" : key_path) + ": " + what);
  }

  // A mapping whose keys must all appear in `fields`. Absent or empty (null)
  // means "all defaults", so a section with every line commented out is fine.
  void mapping(const YAML::Node& node, const std::string& path, const std::vector<Field>& fields) {
    if (node.IsNull()) return;
    if (!node.IsMap()) return error(path, "expected a mapping, got " + describe(node));
    std::set<std::string> seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) {
        error(path, "keys must be plain names, got " + describe(entry.first));
        continue;
      }
      const std::string key = entry.first.Scalar();
      const std::string key_path = join_key(path, printable(key));
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
        return error(p, std::string("expected ") + expected + ", got " + describe(n));
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
        return error(p, "expected a positive integer, got " + describe(n));
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
      if (s != "true" && s != "false") return error(p, "expected true or false, got " + describe(n));
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
        return error(p, "expected a positive number, got " + describe(n));
      if (v < min || v > max) return error(p, std::string("must be ") + range_text + ", got " + s);
      *out = v;
    };
  }

  // A non-empty list of allowlist entries, each obeying the patch contract's
  // path rules (an entry may end in one '/' to allow a directory).
  Read allow_list(std::vector<std::string>* out, bool may_be_empty = false) {
    return [this, out, may_be_empty](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence() || (n.size() == 0 && !may_be_empty))
        return error(p, std::string("expected a ") + (may_be_empty ? "" : "non-empty ") +
                            "list of relative paths, got " + describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(item_path, "expected a non-empty path, got " + describe(item));
          continue;
        }
        std::string_view path = item.Scalar();
        if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
        const std::vector<Finding> findings = check_patch_path(path);
        if (!findings.empty()) {
          std::string why = findings.front().message;
          if (!why.empty() && why.back() == '.') why.pop_back();
          error(item_path, why);
          continue;
        }
        entries.push_back(item.Scalar());
      }
      *out = std::move(entries);
    };
  }

  // A list of "HOST:PORT" (an IP address or a name; IPv6 in brackets).
  Read host_port_list(std::vector<std::string>* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence()) return error(p, "expected a list of HOST:PORT, got " + describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const std::string v = n[i].IsScalar() ? n[i].Scalar() : std::string();
        if (!is_host_port(v)) {
          error(item_path, "expected HOST:PORT (an IPv6 address in brackets, [fd00::1]:443; port 1-65535), got " +
                               describe(n[i]));
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
      if (!n.IsSequence()) return error(p, "expected a list of glob patterns, got " + describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(item_path, "expected a non-empty glob pattern, got " + describe(item));
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
      if (!n.IsSequence()) return error(p, "expected a list of directories, got " + describe(n));
      std::vector<std::string> items;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(p + "[" + std::to_string(i) + "]", "expected a non-empty directory, got " + describe(item));
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
        return error(p, "expected a non-empty list of commands, got " + describe(n));
      std::vector<std::string> items;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(p + "[" + std::to_string(i) + "]", "expected a non-empty command, got " + describe(item));
          continue;
        }
        items.push_back(item.Scalar());
      }
      *out = std::move(items);
    };
  }

  // `environment`: the project's test image (environment.h). Either
  // `containerfile` or `base` + `setup`; `inputs` with both.
  Read environment(EnvironmentConfig* env) {
    return [this, env](const YAML::Node& n, const std::string& p) {
      if (!n.IsMap()) return error(p, "expected a mapping (containerfile, or base + setup; inputs), got " + describe(n));
      const std::size_t before = errors().size();
      mapping(n, p,
              {{"containerfile", relative_path(&env->containerfile)},
               {"base", string(&env->base, is_image_reference, kImageText)},
               {"setup", command_list(&env->setup)},
               {"inputs", allow_list(&env->inputs, true)},
               {"network", string(&env->network, is_build_network, "'bridge' or 'none'")},
               {"egress", egress_list(&env->egress)},
               {"timeout_seconds", integer(&env->timeout_seconds, 1, 86400)}});
      if (errors().size() != before) return;
      if (!env->egress.empty() && env->network == "none")
        return error(p + ".egress", "needs network: bridge (with network: none the set-up reaches nothing)");
      if (!env->containerfile.empty() && (!env->setup.empty() || !env->base.empty()))
        return error(p, "give either containerfile, or base and setup, not both");
      if (env->containerfile.empty() && env->setup.empty())
        return error(p, "needs containerfile (a Containerfile in the seed) or setup (commands run on base)");
      env->present = true;
    };
  }

  // environment.egress: HOST, HOST:PORT or *.DOMAIN (contract/egress_entry.h).
  Read egress_list(std::vector<std::string>* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence() || n.size() == 0)
        return error(p, "expected a non-empty list of host names (HOST, HOST:PORT or *.DOMAIN), got " + describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const YAML::Node item = n[i];
        if (!item.IsScalar()) {
          error(item_path, "expected a host name, got " + describe(item));
          continue;
        }
        if (const std::string why = egress_entry_problem(item.Scalar()); !why.empty()) {
          error(item_path, "'" + printable(item.Scalar()) + "': " + why);
          continue;
        }
        entries.push_back(parse_egress_entry(item.Scalar()).text());
      }
      *out = std::move(entries);
    };
  }

  // One seed-relative path obeying the patch contract's path rules.
  Read relative_path(std::string* out) {
    return [this, out](const YAML::Node& n, const std::string& p) {
      if (!n.IsScalar() || n.Scalar().empty()) return error(p, "expected a relative path, got " + describe(n));
      const std::vector<Finding> findings = check_patch_path(n.Scalar());
      if (!findings.empty()) {
        std::string why = findings.front().message;
        if (!why.empty() && why.back() == '.') why.pop_back();
        return error(p, why);
      }
      *out = n.Scalar();
    };
  }

  // `seed`: a path, or a mapping of `path` and the SeedConfig keys.
  Read seed(std::string* path, SeedConfig* opt) {
    return [this, path, opt](const YAML::Node& n, const std::string& p) {
      if (n.IsMap()) {
        mapping(n, p,
                {{"path", string(path)},
                 {"source", string(&opt->source, is_seed_source, "'auto', 'git' or 'directory'")},
                 {"exclude", glob_list(&opt->exclude)},
                 {"include_git", boolean(&opt->include_git)},
                 {"max_files", integer(&opt->max_files, 1, 10000000, true)},
                 {"max_bytes", integer(&opt->max_bytes, 1, std::int64_t{1} << 40, true)}});
        return;
      }
      string(path)(n, p);
    };
  }

 private:
  static bool is_seed_source(const std::string& s) { return s == "auto" || s == "git" || s == "directory"; }

  std::string source_;
  std::vector<std::string> errors_;
};

// Valid as both a podman secret name and an environment variable name.
bool is_secret_name(const std::string& s) {
  bool ok = !s.empty() && s.size() <= 253 && !(s[0] >= '0' && s[0] <= '9');
  for (const char c : s)
    ok = ok &&
         ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  return ok;
}
constexpr const char* kSecretName = "a secret name matching [A-Za-z_][A-Za-z0-9_]*";

bool is_runtime(const std::string& s) { return s == "runc" || s == "runsc"; }
bool is_k8s_isolation(const std::string& s) {
  return s == "runtime-nonet" || s == "runtimeclass" || s == "networkpolicy";
}
bool is_patch_format(const std::string& s) { return s == "files" || s == "diff"; }
bool is_socket_path(const std::string& s) { return s.size() > 1 && s[0] == '/'; }
bool is_planner_network(const std::string& s) { return s == "bridge" || s == "host" || s == "none"; }
bool is_tool_choice(const std::string& s) { return s == "auto" || s == "required"; }
bool is_response_format_name(const std::string& s) {
  return s == "json_schema" || s == "json_object" || s == "none";
}

bool is_suspicious_mode(const std::string& s) { return s == "flag" || s == "refuse"; }

bool is_image_reference(const std::string& s) {
  for (const char c : s)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
  return true;
}
constexpr const char* kImage = "an image reference without spaces or control characters";
constexpr const char* kReport =
    "auto, output, or junit:PATH, PATH relative to the project (letters, digits, . _ - + /, no '..')";

bool is_report_spec(const std::string& s) {
  if (s == "auto" || s == "output") return true;
  if (s.rfind("junit:", 0) != 0) return false;
  const std::string path = s.substr(6);
  if (path.empty() || path.size() > 255 || path[0] == '/' || path.back() == '/') return false;
  for (const char c : path) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("._-+/").find(c) == std::string_view::npos) {
      return false;
    }
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    const std::string part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}


// `seed` relative to the config file's directory (or the working directory).
std::string resolve_seed(const std::string& seed, const std::string& base_dir) {
  fs::path p(seed);
  if (p.is_relative()) {
    std::error_code ec;
    fs::path base = base_dir.empty() ? fs::current_path(ec) : fs::path(base_dir);
    if (base.is_relative()) base = fs::absolute(base, ec);
    p = base / p;
  }
  std::string out = p.lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string error_text(int err) { return std::generic_category().message(err); }

// The number of YAML documents in `text`, read with the parser's events.
//
// Not YAML::LoadAll: yaml-cpp 0.7 (Debian 12) loops forever in it on a stray
// ',' outside a flow collection (a file holding just ","), each turn adding an
// empty document without consuming input, until memory runs out (found by
// fuzz/config_fuzzer.cpp; upstream jbeder/yaml-cpp#1040, fixed after 0.8).
// Here a document that starts where the previous one started means the parser
// is stuck on a token no rule takes: that is refused as invalid YAML.
class DocumentStarts : public YAML::EventHandler {
 public:
  YAML::Mark start;
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

Result<std::size_t> count_documents(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  std::size_t count = 0;
  int previous = -1;
  while (parser.HandleNextDocument(starts)) {
    if (starts.start.pos == previous) {
      const std::size_t at = static_cast<std::size_t>(previous);
      const std::string token = at < text.size() ? text.substr(at, 1) : std::string();
      return usage_error(name + ": line " + std::to_string(starts.start.line + 1) + ", column " +
                         std::to_string(starts.start.column + 1) + ": invalid YAML: unexpected '" +
                         printable(token) + "'");
    }
    previous = starts.start.pos;
    ++count;
  }
  return count;
}

}  // namespace

Result<Config> parse_config(const std::string& yaml_text, const std::string& source,
                            const std::string& base_dir) {
  const std::string name = source.empty() ? "config" : source;
  try {
    const Result<std::size_t> docs = count_documents(yaml_text, name);
    if (!docs) return docs.error();
    if (*docs > 1)
      return usage_error(name + ": expected one YAML document, found " + std::to_string(*docs));
    Config cfg;
    cfg.source = source;
    if (*docs == 0) return cfg;  // an empty file means the defaults

    Reader r(name);
    std::string seed;
    LimitsConfig& lim = cfg.limits;
    r.mapping(
        YAML::Load(yaml_text), "",
        {
            {"seed", r.seed(&seed, &cfg.seed_options)},
            {"allow", r.allow_list(&cfg.allow)},
            {"test_command", r.string(&cfg.test_command)},
            {"report", r.string(&cfg.report, is_report_spec, kReport)},
            {"images",
             r.nested({{"sandbox", r.string(&cfg.images.sandbox, is_image_reference, kImage)},
                       {"planner", r.string(&cfg.images.planner, is_image_reference, kImage)}})},
            {"limits",
             r.nested({{"memory_mib", r.marked(&lim.set_in_config, r.integer(&lim.memory_mib, 6, 65536))},
                       {"pids", r.marked(&lim.set_in_config, r.integer(&lim.pids, 1, 65536))},
                       {"cpus", r.marked(&lim.set_in_config, r.number(&lim.cpus, 0.01, 256, "between 0.01 and 256"))},
                       {"nofile", r.marked(&lim.set_in_config, r.integer(&lim.nofile, 1, 65536))},
                       {"nproc", r.marked(&lim.set_in_config, r.integer(&lim.nproc, 1, 65536))},
                       {"work_tmpfs_mib", r.marked(&lim.set_in_config, r.integer(&lim.work_tmpfs_mib, 1, 16384))},
                       {"tmp_tmpfs_mib", r.marked(&lim.set_in_config, r.integer(&lim.tmp_tmpfs_mib, 1, 16384))},
                       {"log_bytes", r.marked(&lim.set_in_config, r.integer(&lim.log_bytes, 4096, 64 * 1024 * 1024))}})},
            {"timeouts",
             r.nested({{"test_seconds", r.integer(&cfg.timeouts.test_seconds, 1, 86400)},
                       {"planner_seconds", r.integer(&cfg.timeouts.planner_seconds, 1, 86400)}})},
            {"patch", r.nested({{"max_files", r.integer(&cfg.patch.max_files, 1,
                                                        std::int64_t{kMaxPatchFilesCap}, true)},
                                {"max_bytes", r.integer(&cfg.patch.max_bytes, 1,
                                                        std::int64_t{kMaxPatchBytesCap}, true)},
                                {"max_diff_bytes", r.integer(&cfg.patch.max_diff_bytes, 1,
                                                             std::int64_t{kMaxDiffBytesCap}, true)},
                                {"max_changed_lines", r.integer(&cfg.patch.max_changed_lines, 1,
                                                                std::int64_t{kMaxChangedLinesCap}, true)},
                                {"format", r.string(&cfg.patch.format, is_patch_format,
                                                    "'files' or 'diff'")},
                                {"suspicious", r.string(&cfg.patch.suspicious, is_suspicious_mode,
                                                        "'flag' or 'refuse'")}})},
            {"provider",
             r.nested(
                 {{"secrets", r.nested({{"base_url", r.string(&cfg.provider.base_url_secret,
                                                              is_secret_name, kSecretName)},
                                        {"model", r.string(&cfg.provider.model_secret,
                                                           is_secret_name, kSecretName)},
                                        {"api_key", r.string(&cfg.provider.api_key_secret,
                                                             is_secret_name, kSecretName)}})},
                  {"connect_timeout_seconds", r.integer(&cfg.provider.connect_timeout_seconds, 1, 600)},
                  {"timeout_seconds", r.integer(&cfg.provider.timeout_seconds, 1, 3600)},
                  {"max_retries", r.integer(&cfg.provider.max_retries, 0, 10)},
                  {"network", r.string(&cfg.provider.network, is_planner_network,
                                       "'bridge', 'host' or 'none'")},
                  {"response_format", r.string(&cfg.provider.response_format, is_response_format_name,
                                               "'json_schema', 'json_object' or 'none'")}})},
            {"engine", r.nested({{"runtime", r.string(&cfg.engine.runtime, is_runtime,
                                                      "'runc' or 'runsc'")},
                                 {"runsc_socket", r.string(&cfg.engine.runsc_socket, is_socket_path,
                                                           "an absolute socket path")},
                                 {"accept_weaker_policy", r.boolean(&cfg.engine.accept_weaker_policy)},
                                 {"warm", r.integer(&cfg.engine.warm, 0, 8)},
                                 {"warm_ttl_seconds", r.integer(&cfg.engine.warm_ttl_seconds, 10, 86400)}})},
            {"user_namespace",
             r.nested({{"host_id", r.integer(&cfg.user_namespace.host_id, 65536, 4294901759LL)},
                       {"size", r.integer(&cfg.user_namespace.size, 65536, 16777216)}})},
            {"repair", r.nested({{"attempts", r.integer(&cfg.repair.attempts, 1, 20)},
                                 {"max_tokens", r.integer(&cfg.repair.max_tokens, 0, std::int64_t{1} << 40)},
                                 {"rerun", r.integer(&cfg.repair.rerun, 0, 10)}})},
            {"planner", r.nested({{"context_bytes", r.integer(&cfg.planner.context_bytes, 1024, 64 << 20)},
                                  {"tools", r.boolean(&cfg.planner.tools)},
                                  {"max_turns", r.integer(&cfg.planner.max_turns, 1, 200)},
                                  {"tool_result_bytes", r.integer(&cfg.planner.tool_result_bytes, 256, 1 << 20)},
                                  {"loop_seconds", r.integer(&cfg.planner.loop_seconds, 1, 86400)},
                                  {"tool_choice", r.string(&cfg.planner.tool_choice, is_tool_choice,
                                                           "'auto' or 'required'")},
                                  {"max_reply_tokens", r.integer(&cfg.planner.max_reply_tokens, 0, 1 << 20)},
                                  {"baseline_first", r.boolean(&cfg.planner.baseline_first)},
                                  {"map_bytes", r.integer(&cfg.planner.map_bytes, 0, 1 << 20)}})},
            {"k8s", r.nested({{"namespace", r.string(&cfg.k8s.ns)},
                              {"secret", r.string(&cfg.k8s.secret)},
                              {"runtime_class", r.string(&cfg.k8s.runtime_class)},
                              {"plain_http_provider_ip", r.string(&cfg.k8s.plain_http_provider_ip)},
                              {"ttl_seconds_after_finished",
                               r.integer(&cfg.k8s.ttl_seconds_after_finished, 0, 30 * 86400)},
                              {"isolation", r.string(&cfg.k8s.isolation, is_k8s_isolation,
                                                     "'runtime-nonet', 'runtimeclass' or 'networkpolicy'")},
                              {"egress_probe_targets", r.host_port_list(&cfg.k8s.egress_probe_targets)},
                              {"planner_egress", r.host_port_list(&cfg.k8s.planner_egress)},
                              {"planner_egress_required", r.boolean(&cfg.k8s.planner_egress_required)}})},
            {"environment", r.environment(&cfg.environment)},
            {"mcp", r.nested({{"seeds", r.path_list(&cfg.mcp.seeds)}})},
        });
    if (r.errors().empty() &&
        cfg.user_namespace.host_id + cfg.user_namespace.size - 1 > 4294967294LL) {
      r.error("user_namespace", "host_id + size - 1 must not exceed 4294967294, got " +
                                    std::to_string(cfg.user_namespace.host_id + cfg.user_namespace.size - 1));
    }
    for (std::size_t i = 0; r.errors().empty() && i < cfg.k8s.planner_egress.size(); ++i) {
      if (const auto why = planner_egress_entry_problem(cfg.k8s.planner_egress[i]); !why.empty()) {
        r.error("k8s.planner_egress[" + std::to_string(i) + "]", why);
      }
    }
    if (r.errors().empty() && cfg.k8s.planner_egress_required && cfg.k8s.planner_egress.empty()) {
      r.error("k8s.planner_egress_required", "needs k8s.planner_egress (the provider's ADDRESS:PORT) to check");
    }
    if (r.errors().empty() && cfg.k8s.isolation == "runtimeclass" && cfg.k8s.runtime_class == "none") {
      r.error("k8s.isolation", "runtimeclass needs k8s.runtime_class naming your cluster's RuntimeClass (e.g. "
                               "gvisor, kata), not none");
    }
    if (r.errors().empty() && cfg.k8s.isolation == "networkpolicy" && cfg.k8s.runtime_class != "none" &&
        cfg.k8s.runtime_class != K8sConfig{}.runtime_class) {
      r.error("k8s.runtime_class", "networkpolicy runs with no RuntimeClass; with " + cfg.k8s.runtime_class +
                                       " set k8s.isolation: runtimeclass");
    }
    if (!r.errors().empty()) {
      std::string all;
      for (const std::string& e : r.errors()) all += (all.empty() ? "" : "\n") + e;
      return usage_error(all);
    }
    if (!seed.empty()) cfg.seed = resolve_seed(seed, base_dir);
    for (auto& dir : cfg.mcp.seeds) dir = resolve_seed(dir, base_dir);
    return cfg;
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return usage_error(name + ": invalid YAML: " + e.msg);
    return usage_error(name + ": line " + std::to_string(e.mark.line + 1) + ", column " +
                       std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return usage_error(name + ": cannot load config: " + e.what());
  }
}

Result<Config> load_config_file(const std::string& path) {
  if (path.empty()) return usage_error("config file path is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return usage_error(path + ": cannot read config file: it is a directory");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return usage_error(path + ": cannot read config file: " + error_text(errno));
  std::string text;
  char buf[8192];
  std::size_t n = 0;
  while (text.size() <= kMaxConfigFileBytes && (n = std::fread(buf, 1, sizeof buf, f)) > 0)
    text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) return usage_error(path + ": cannot read config file: " + error_text(err));
  if (text.size() > kMaxConfigFileBytes)
    return usage_error(path + ": config file is larger than 1 MiB");
  fs::path dir = fs::absolute(fs::path(path), ec).parent_path();
  if (ec) dir = fs::path(path).parent_path();
  return parse_config(text, path, dir.string());
}

std::string default_config_path() {
  if (const char* env = std::getenv("LAZYAGENT_CONFIG"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  if (fs::is_regular_file("config/lazyagent.yaml", ec)) return "config/lazyagent.yaml";
  // Installed next to the binary (<prefix>/bin/.. /share), wherever the
  // prefix was chosen at install time; then the configured prefix.
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path() / "share/lazyagent-oci/config/lazyagent.yaml";
    if (fs::is_regular_file(beside, ec)) return beside.string();
  }
  const std::string installed = std::string(LAZYAGENT_DATADIR) + "/config/lazyagent.yaml";
  if (fs::is_regular_file(installed, ec)) return installed;
  return "";
}

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
