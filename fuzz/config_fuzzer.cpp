// Fuzz target: the config loader (src/config.*), parse_config on YAML text.
//
// Input: a config file's text. Checked beyond crashes:
//   - a refusal is kUsage and every line of it names the source;
//   - an accepted config is within the documented ranges, its allowlist
//     obeys the patch contract's path rules, its seed is absolute;
//   - round trip: the accepted Config written back as YAML (every string
//     double-quoted with escapes, numbers exactly) parses to the same Config.
//     parse_config must read values, not the way they were written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config.h"
#include "fuzz_checks.h"
#include "util/path_glob.h"

namespace {

using lazyagent::Config;

// A YAML double-quoted scalar; everything outside printable ASCII escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0, len = 1; i < s.size(); i += len) {
    const long cp = lazyagent::decode_utf8(s, i, len);
    char buf[16];
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp >= 0x20 && cp < 0x7f) {
      out += static_cast<char>(cp);
    } else if (cp <= 0xffff) {
      std::snprintf(buf, sizeof buf, "\\u%04lx", cp);
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\U%08lx", cp);
      out += buf;
    }
  }
  return out + "\"";
}

std::string num(std::int64_t v) { return std::to_string(v); }
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string to_yaml(const Config& c) {
  std::string y;
  if (!c.seed.empty()) y += "seed: " + quoted(c.seed) + "\n";
  y += "allow:\n";
  for (const auto& a : c.allow) y += "  - " + quoted(a) + "\n";
  y += "test_command: " + quoted(c.test_command) + "\n";
  y += "images:\n  sandbox: " + quoted(c.images.sandbox) + "\n  planner: " + quoted(c.images.planner) + "\n";
  const auto& l = c.limits;
  y += "limits:\n  memory_mib: " + num(l.memory_mib) + "\n  pids: " + num(l.pids) +
       "\n  cpus: " + num(l.cpus) + "\n  nofile: " + num(l.nofile) + "\n  nproc: " + num(l.nproc) +
       "\n  work_tmpfs_mib: " + num(l.work_tmpfs_mib) + "\n  tmp_tmpfs_mib: " + num(l.tmp_tmpfs_mib) +
       "\n  log_bytes: " + num(l.log_bytes) + "\n";
  y += "timeouts:\n  test_seconds: " + num(c.timeouts.test_seconds) +
       "\n  planner_seconds: " + num(c.timeouts.planner_seconds) + "\n";
  y += "patch:\n  max_files: " + num(c.patch.max_files) + "\n  max_bytes: " + num(c.patch.max_bytes) +
       "\n  max_diff_bytes: " + num(c.patch.max_diff_bytes) + "\n  max_changed_lines: " +
       num(c.patch.max_changed_lines) + "\n  format: " + quoted(c.patch.format) + "\n";
  const auto& p = c.provider;
  y += "provider:\n  secrets:\n    base_url: " + quoted(p.base_url_secret) + "\n    model: " +
       quoted(p.model_secret) + "\n    api_key: " + quoted(p.api_key_secret) +
       "\n  connect_timeout_seconds: " + num(p.connect_timeout_seconds) +
       "\n  timeout_seconds: " + num(p.timeout_seconds) + "\n  max_retries: " + num(p.max_retries) +
       "\n  network: " + quoted(p.network) + "\n";
  y += "engine:\n  runtime: " + quoted(c.engine.runtime) + "\n";
  return y;
}

bool all_utf8(const Config& c) {
  bool ok = lazyagent::is_valid_utf8(c.seed) && lazyagent::is_valid_utf8(c.test_command) &&
            lazyagent::is_valid_utf8(c.images.sandbox) && lazyagent::is_valid_utf8(c.images.planner);
  for (const auto& a : c.allow) ok = ok && lazyagent::is_valid_utf8(a);
  return ok;
}

bool in(std::int64_t v, std::int64_t lo, std::int64_t hi) { return v >= lo && v <= hi; }

void check_ranges(const Config& c) {
  const auto& l = c.limits;
  FUZZ_CHECK(in(l.memory_mib, 6, 65536) && in(l.pids, 1, 65536) && in(l.nofile, 1, 65536) &&
                 in(l.nproc, 1, 65536) && in(l.work_tmpfs_mib, 1, 16384) &&
                 in(l.tmp_tmpfs_mib, 1, 16384) && in(l.log_bytes, 4096, 64 * 1024 * 1024),
             "limits within their documented ranges");
  FUZZ_CHECK(std::isfinite(l.cpus) && l.cpus >= 0.01 && l.cpus <= 256, "cpus within 0.01..256");
  FUZZ_CHECK(in(c.timeouts.test_seconds, 1, 86400) && in(c.timeouts.planner_seconds, 1, 86400),
             "timeouts within range");
  FUZZ_CHECK(in(c.patch.max_files, 1, 1000) && in(c.patch.max_bytes, 1, 4194304) &&
                 in(c.patch.max_diff_bytes, 1, 4194304) && in(c.patch.max_changed_lines, 1, 200000),
             "patch limits never above the contract's hard caps");
  FUZZ_CHECK(c.patch.format == "files" || c.patch.format == "diff", "patch format is known");
  FUZZ_CHECK(in(c.seed_options.max_files, 1, 10000000) && in(c.seed_options.max_bytes, 1, std::int64_t{1} << 40),
             "seed caps within range");
  for (const std::string& g : c.seed_options.exclude) FUZZ_CHECK(lazyagent::glob_problem(g).empty(), "exclude glob is valid");
  FUZZ_CHECK(in(c.provider.max_retries, 0, 10) && in(c.provider.timeout_seconds, 1, 3600) &&
                 in(c.provider.connect_timeout_seconds, 1, 600),
             "provider numbers within range");
  FUZZ_CHECK(!c.allow.empty(), "allowlist never empty");
  for (const std::string& a : c.allow) {
    std::string_view p = a;
    if (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    FUZZ_CHECK(lazyagent::check_patch_path(p).empty(), "allowlist entry obeys the path rules: " + a);
  }
  FUZZ_CHECK(c.seed.empty() || c.seed.front() == '/', "seed is absolute once loaded");
  FUZZ_CHECK(c.engine.runtime == "runc" || c.engine.runtime == "runsc", "runtime is known");
}

void check_same(const Config& a, const Config& b) {
  FUZZ_CHECK(a.seed == b.seed, "round trip: seed '" + a.seed + "' vs '" + b.seed + "'");
  FUZZ_CHECK(a.allow == b.allow, "round trip: allow");
  FUZZ_CHECK(a.test_command == b.test_command, "round trip: test_command");
  FUZZ_CHECK(a.images.sandbox == b.images.sandbox && a.images.planner == b.images.planner, "round trip: images");
  const auto &l = a.limits, &m = b.limits;
  FUZZ_CHECK(l.memory_mib == m.memory_mib && l.pids == m.pids && l.cpus == m.cpus &&
                 l.nofile == m.nofile && l.nproc == m.nproc && l.work_tmpfs_mib == m.work_tmpfs_mib &&
                 l.tmp_tmpfs_mib == m.tmp_tmpfs_mib && l.log_bytes == m.log_bytes,
             "round trip: limits");
  FUZZ_CHECK(a.timeouts.test_seconds == b.timeouts.test_seconds &&
                 a.timeouts.planner_seconds == b.timeouts.planner_seconds,
             "round trip: timeouts");
  FUZZ_CHECK(a.patch.max_files == b.patch.max_files && a.patch.max_bytes == b.patch.max_bytes &&
                 a.patch.max_diff_bytes == b.patch.max_diff_bytes &&
                 a.patch.max_changed_lines == b.patch.max_changed_lines && a.patch.format == b.patch.format,
             "round trip: patch");
  const auto &p = a.provider, &q = b.provider;
  FUZZ_CHECK(p.base_url_secret == q.base_url_secret && p.model_secret == q.model_secret &&
                 p.api_key_secret == q.api_key_secret &&
                 p.connect_timeout_seconds == q.connect_timeout_seconds &&
                 p.timeout_seconds == q.timeout_seconds && p.max_retries == q.max_retries &&
                 p.network == q.network,
             "round trip: provider");
  FUZZ_CHECK(a.engine.runtime == b.engine.runtime, "round trip: engine");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = lazyagent::parse_config(text, "fuzz.yaml", "/base/dir");
  if (!cfg) {
    FUZZ_CHECK(cfg.error().kind == lazyagent::ErrorKind::kUsage, "config errors are kUsage");
    const std::string& m = cfg.error().message;
    for (std::size_t at = 0; at != std::string::npos && at < m.size();) {
      FUZZ_CHECK(m.compare(at, 10, "fuzz.yaml:") == 0, "every error line names the source: " + m);
      at = m.find('\n', at);
      if (at != std::string::npos) ++at;
    }
    return 0;
  }
  check_ranges(*cfg);
  if (!all_utf8(*cfg)) return 0;  // YAML text cannot carry bytes that are not UTF-8
  const std::string again = to_yaml(*cfg);
  auto cfg2 = lazyagent::parse_config(again, "fuzz.yaml", "/elsewhere");
  FUZZ_CHECK(cfg2.ok(), "a written-back config parses again: " +
                            (cfg2.ok() ? std::string() : cfg2.error().message) + "\n" + again);
  check_same(*cfg, *cfg2);
  return 0;
}
