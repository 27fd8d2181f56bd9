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
//   patch.max_bytes        1..4 MiB    default 12000   config.h's kMax*Cap
//   patch.max_diff_bytes   1..4 MiB    default 12000
//   patch.max_changed_lines 1..200000  default 1000
//   patch.suspicious       flag|refuse what suspicious findings do (suspicious_code.h)
//   seed.max_files         1..10^7     default 100000
//   seed.max_bytes         1..1 TiB    default 2 GiB
//   user_namespace.host_id 65536..4294901759, and host_id + size - 1 <= 4294967294
//   user_namespace.size    65536..16777216   covers the image's ids up to nobody (65534)
#include "config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include "contract/egress_entry.h"
#include "contract/patch_contract.h"
#include "util/ip_address.h"
#include "util/path_glob.h"
#include "util/yaml_reader.h"

#ifndef LAZYAGENT_DATADIR
#define LAZYAGENT_DATADIR "/usr/local/share/lazyagent-oci"
#endif

namespace lazyagent {
namespace {

// "" if `hp` is a HOST:PORT a NetworkPolicy can allow (an IP address, not
// a name), else why not.
std::string planner_egress_entry_problem(const std::string& hp) {
  std::string host, port;
  if (!split_host_port(hp, &host, &port)) return "expected HOST:PORT, got '" + hp + "'";
  const bool bracketed = hp.front() == '[';
  if (bracketed ? !is_ipv6_address(host) : !is_ipv4_address(host)) {
    return "'" + host +
           "' is not an IP address: a NetworkPolicy allows addresses, not names; give the provider's address "
           "(IPv6 in brackets), e.g. from `getent ahosts " + host + "`";
  }
  return "";
}

namespace fs = std::filesystem;

constexpr std::size_t kMaxConfigFileBytes = 1024 * 1024;

bool is_image_reference(const std::string& s);
constexpr const char* kImageText = "an image reference without spaces or control characters";
bool is_build_network(const std::string& s) { return s == "bridge" || s == "none"; }

// The config's own kinds of value, on top of the generic reader.
class ConfigReader : public YamlReader {
 public:
  using YamlReader::YamlReader;

  // A non-empty list of allowlist entries, each obeying the patch contract's
  // path rules (an entry may end in one '/' to allow a directory).
  Read allow_list(std::vector<std::string>* out, bool may_be_empty = false) {
    return [this, out, may_be_empty](const YAML::Node& n, const std::string& p) {
      if (!n.IsSequence() || (n.size() == 0 && !may_be_empty))
        return error(p, std::string("expected a ") + (may_be_empty ? "" : "non-empty ") +
                            "list of relative paths, got " + yaml_describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const YAML::Node item = n[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
          error(item_path, "expected a non-empty path, got " + yaml_describe(item));
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

  // `environment`: the project's test image (environment.h). Either
  // `containerfile` or `base` + `setup`; `inputs` with both.
  Read environment(EnvironmentConfig* env) {
    return [this, env](const YAML::Node& n, const std::string& p) {
      if (!n.IsMap()) return error(p, "expected a mapping (containerfile, or base + setup; inputs), got " + yaml_describe(n));
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
        return error(p, "expected a non-empty list of host names (HOST, HOST:PORT or *.DOMAIN), got " + yaml_describe(n));
      std::vector<std::string> entries;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string item_path = p + "[" + std::to_string(i) + "]";
        const YAML::Node item = n[i];
        if (!item.IsScalar()) {
          error(item_path, "expected a host name, got " + yaml_describe(item));
          continue;
        }
        if (const std::string why = egress_entry_problem(item.Scalar()); !why.empty()) {
          error(item_path, "'" + yaml_printable(item.Scalar()) + "': " + why);
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
      if (!n.IsScalar() || n.Scalar().empty()) return error(p, "expected a relative path, got " + yaml_describe(n));
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

bool is_runtime(const std::string& s) { return s == "runc" || s == "crun" || s == "runsc"; }
bool is_k8s_isolation(const std::string& s) {
  return s == "runtime-nonet" || s == "runtimeclass" || s == "networkpolicy";
}
// HOST[:PORT], HOST a DNS name or an IP address (IPv6 in brackets).
bool is_registry_address(const std::string& s) {
  static const std::regex re(R"((([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?)");
  return std::regex_match(s, re);
}
bool is_patch_format(const std::string& s) { return s == "files" || s == "diff"; }
bool is_socket_path(const std::string& s) { return s.size() > 1 && s[0] == '/'; }
bool is_planner_network(const std::string& s) {
  return s == "bridge" || s == "host" || s == "none" || s == "allowlist";
}
bool is_session_isolation(const std::string& s) { return s == "live" || s == "per-command"; }
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

}  // namespace

Result<Config> parse_config(const std::string& yaml_text, const std::string& source,
                            const std::string& base_dir) {
  const std::string name = source.empty() ? "config" : source;
  try {
    const Result<std::size_t> docs = count_yaml_documents(yaml_text, name);
    if (!docs) return docs.error();
    if (*docs > 1)
      return usage_error(name + ": expected one YAML document, found " + std::to_string(*docs));
    Config cfg;
    cfg.source = source;
    if (*docs == 0) return cfg;  // an empty file means the defaults

    ConfigReader r(name);
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
                                       "'bridge', 'allowlist', 'host' or 'none'")},
                  {"response_format", r.string(&cfg.provider.response_format, is_response_format_name,
                                               "'json_schema', 'json_object' or 'none'")}})},
            {"engine", r.nested({{"runtime",
                                  [&cfg, read = r.string(&cfg.engine.runtime, is_runtime, "'runc', 'crun' or 'runsc'")](
                                      const YAML::Node& n, const std::string& p) {
                                    read(n, p);
                                    cfg.engine.runtime_explicit = true;
                                  }},
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
                              {"planner_egress_required", r.boolean(&cfg.k8s.planner_egress_required)},
                              {"registry", r.string(&cfg.k8s.registry, is_registry_address,
                                                    "HOST:PORT (an IPv6 address in brackets)")},
                              {"registry_plain_http", r.boolean(&cfg.k8s.registry_plain_http)},
                              {"registry_ca_file", r.string(&cfg.k8s.registry_ca_file)},
                              {"registry_username", r.string(&cfg.k8s.registry_username)},
                              {"registry_password_file", r.string(&cfg.k8s.registry_password_file)},
                              {"registry_ttl_hours", r.integer(&cfg.k8s.registry_ttl_hours, 1, 8760)}})},
            {"environment", r.environment(&cfg.environment)},
            {"mcp", r.nested({{"seeds", r.path_list(&cfg.mcp.seeds)}})},
            {"sessions", r.nested({{"idle_ttl_seconds", r.integer(&cfg.sessions.idle_ttl_seconds, 10, 604800)},
                                   {"max_age_seconds", r.integer(&cfg.sessions.max_age_seconds, 60, 2592000)},
                                   {"disk_mib", r.integer(&cfg.sessions.disk_mib, 16, 1048576)},
                                   {"max_files", r.integer(&cfg.sessions.max_files, 1024, 100000000)},
                                   {"isolation", r.string(&cfg.sessions.isolation, is_session_isolation,
                                                          "'live' or 'per-command'")}})},
            {"signing", r.nested({{"key", r.string(&cfg.signing.key)}})},
            {"eval", r.nested({{"engine_wait_seconds", r.integer(&cfg.eval.engine_wait_seconds, 0, 604800)}})},
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
    if (r.errors().empty() && cfg.k8s.registry_username.empty() != cfg.k8s.registry_password_file.empty()) {
      r.error("k8s.registry_username", "needs k8s.registry_password_file too (and the other way round)");
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
    if (!cfg.signing.key.empty()) cfg.signing.key = resolve_seed(cfg.signing.key, base_dir);
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

}  // namespace lazyagent
