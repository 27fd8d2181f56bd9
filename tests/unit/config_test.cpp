// Config: the shipped file equals the built-in defaults, and every kind of
// mistake a user can make is reported with its key path, in exact words.
#include "test_paths.h"
#include "config.h"

#include "catch_compat.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace lazyagent;

namespace {

namespace fs = std::filesystem;

Result<Config> parse(const std::string& yaml) {
  return parse_config(yaml, "cfg.yaml", "/srv/proj/config");
}

// The error text of a config that must be refused (and is a usage error).
std::string error_of(const std::string& yaml) {
  const Result<Config> r = parse(yaml);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kUsage);
  return r.error().message;
}

// A directory that removes itself.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("lazyagent-config-test-" + std::to_string(::getpid()) +
                                        "-" + std::to_string(++counter));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

void check_defaults_except_seed(const Config& c) {
  const Config d;
  CHECK(c.allow == d.allow);
  CHECK(c.test_command == d.test_command);
  CHECK(c.report == d.report);
  CHECK(c.images.sandbox == d.images.sandbox);
  CHECK(c.images.planner == d.images.planner);
  CHECK(c.limits.memory_mib == d.limits.memory_mib);
  CHECK(c.limits.pids == d.limits.pids);
  CHECK(c.limits.cpus == d.limits.cpus);
  CHECK(c.limits.nofile == d.limits.nofile);
  CHECK(c.limits.nproc == d.limits.nproc);
  CHECK(c.limits.work_tmpfs_mib == d.limits.work_tmpfs_mib);
  CHECK(c.limits.tmp_tmpfs_mib == d.limits.tmp_tmpfs_mib);
  CHECK(c.limits.log_bytes == d.limits.log_bytes);
  CHECK(c.timeouts.test_seconds == d.timeouts.test_seconds);
  CHECK(c.patch.max_files == d.patch.max_files);
  CHECK(c.patch.max_bytes == d.patch.max_bytes);
  CHECK(c.provider.base_url_secret == d.provider.base_url_secret);
  CHECK(c.provider.model_secret == d.provider.model_secret);
  CHECK(c.provider.api_key_secret == d.provider.api_key_secret);
  CHECK(c.engine.runtime == d.engine.runtime);
}

}  // namespace

TEST_CASE("the shipped config loads and equals the built-in defaults", "[config]") {
  const std::string path = std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml";
  const Result<Config> r = load_config_file(path);
  REQUIRE(r.ok());
  check_defaults_except_seed(*r);
  CHECK(r->source == path);
  // It must not pin a runtime: on a crun host (Debian 13, Fedora) a pinned
  // runc would make every sandbox a usage error (issue 40).
  CHECK_FALSE(r->engine.runtime_explicit);
  CHECK(r->seed == (fs::path(LAZYAGENT_SOURCE_DIR) / "seed").lexically_normal().string());
  CHECK(fs::is_regular_file(fs::path(r->seed) / "calculator.py"));
}

TEST_CASE("an empty document means the defaults", "[config]") {
  for (const char* text : {"", "# nothing\n", "---\n", "limits:\n"}) {
    const Result<Config> r = parse(text);
    REQUIRE(r.ok());
    check_defaults_except_seed(*r);
    CHECK(r->seed.empty());
  }
}

TEST_CASE("every key can be set", "[config]") {
  const Result<Config> r = parse(R"(
seed: /abs/seed/
allow: [calculator.py, pkg/]
test_command: pytest -q
images: {sandbox: localhost/s:1, planner: localhost/p:1}
limits: {memory_mib: 256, pids: 64, cpus: 0.5, nofile: 512, nproc: 64,
         work_tmpfs_mib: 32, tmp_tmpfs_mib: 16, log_bytes: 4096}
timeouts: {test_seconds: 30}
patch: {max_files: 1, max_bytes: 4000}
provider: {secrets: {base_url: URL, model: M_1, api_key: _KEY}}
engine: {runtime: runsc}
)");
  REQUIRE(r.ok());
  CHECK(r->seed == "/abs/seed");
  CHECK(r->allow == std::vector<std::string>{"calculator.py", "pkg/"});
  CHECK(r->test_command == "pytest -q");
  CHECK(r->images.planner == "localhost/p:1");
  CHECK(r->limits.memory_mib == 256);
  CHECK(r->limits.cpus == 0.5);
  CHECK(r->limits.log_bytes == 4096);
  CHECK(r->timeouts.test_seconds == 30);
  CHECK(r->patch.max_files == 1);
  CHECK(r->patch.max_bytes == 4000);
  CHECK(r->provider.api_key_secret == "_KEY");
  CHECK(r->engine.runtime == "runsc");
}

TEST_CASE("a relative seed resolves against the config file's directory", "[config]") {
  CHECK(parse("seed: ../seed")->seed == "/srv/proj/seed");
  CHECK(parse("seed: .")->seed == "/srv/proj/config");
  CHECK(parse("seed: sub/dir/")->seed == "/srv/proj/config/sub/dir");
  const Result<Config> cwd = parse_config("seed: s", "", "");
  REQUIRE(cwd.ok());
  CHECK(cwd->seed == (fs::current_path() / "s").string());
}

TEST_CASE("wrong types name the key and the value", "[config]") {
  CHECK(error_of("limits:\n  memory_mib: lots\n") ==
        "cfg.yaml: limits.memory_mib: expected a positive integer, got 'lots'");
  CHECK(error_of("limits: {pids: [1]}") ==
        "cfg.yaml: limits.pids: expected a positive integer, got a list");
  CHECK(error_of("limits: {nofile: 1.5}") ==
        "cfg.yaml: limits.nofile: expected a positive integer, got '1.5'");
  CHECK(error_of("limits: {cpus: lots}") ==
        "cfg.yaml: limits.cpus: expected a positive number, got 'lots'");
  CHECK(error_of("limits: {cpus: 0x10}") ==
        "cfg.yaml: limits.cpus: expected a positive number, got '0x10'");
  CHECK(error_of("limits: 5") == "cfg.yaml: limits: expected a mapping, got '5'");
  CHECK(error_of("seed:") == "cfg.yaml: seed: expected a non-empty string, got nothing");
  CHECK(error_of("test_command: ''") ==
        "cfg.yaml: test_command: expected a non-empty string, got ''");
  CHECK(
      error_of("images: {sandbox: {a: 1}}") ==
      "cfg.yaml: images.sandbox: expected an image reference without spaces or control characters, "
      "got a mapping");
  CHECK(error_of("- a\n- b\n") == "cfg.yaml: top level: expected a mapping, got a list");
}

TEST_CASE("out-of-range values state the range", "[config]") {
  CHECK(error_of("limits: {memory_mib: 100000}") ==
        "cfg.yaml: limits.memory_mib: must be between 6 and 65536, got 100000");
  CHECK(error_of("limits: {memory_mib: 0}") ==
        "cfg.yaml: limits.memory_mib: must be between 6 and 65536, got 0");
  CHECK(error_of("limits: {pids: -1}") ==
        "cfg.yaml: limits.pids: must be between 1 and 65536, got -1");
  CHECK(error_of("limits: {log_bytes: 100}") ==
        "cfg.yaml: limits.log_bytes: must be between 4096 and 67108864, got 100");
  CHECK(error_of("limits: {cpus: 0}") ==
        "cfg.yaml: limits.cpus: must be between 0.01 and 256, got 0");
  CHECK(error_of("timeouts: {test_seconds: 86401}") ==
        "cfg.yaml: timeouts.test_seconds: must be between 1 and 86400, got 86401");
  CHECK(error_of("timeouts: {test_seconds: 99999999999999999999}") ==
        "cfg.yaml: timeouts.test_seconds: must be between 1 and 86400, got 99999999999999999999");
}

TEST_CASE("patch limits default to the origin guide's and may be raised up to the hard caps", "[config]") {
  const Config d;
  CHECK(d.patch.max_files == 3);
  CHECK(d.patch.max_bytes == 12000);
  CHECK(d.patch.max_diff_bytes == 12000);
  CHECK(d.patch.max_changed_lines == 1000);
  CHECK(d.patch.format == "files");
  CHECK(error_of("patch: {max_files: 1001}") ==
        "cfg.yaml: patch.max_files: cannot be raised past the cap of 1000, got 1001");
  CHECK(error_of("patch: {max_bytes: 4194305}") ==
        "cfg.yaml: patch.max_bytes: cannot be raised past the cap of 4194304, got 4194305");
  CHECK(error_of("patch: {max_diff_bytes: 99999999999999999999}") ==
        "cfg.yaml: patch.max_diff_bytes: cannot be raised past the cap of 4194304, got 99999999999999999999");
  CHECK(error_of("patch: {max_changed_lines: 200001}") ==
        "cfg.yaml: patch.max_changed_lines: cannot be raised past the cap of 200000, got 200001");
  CHECK(error_of("patch: {max_files: 0}") ==
        "cfg.yaml: patch.max_files: must be between 1 and 1000, got 0");
  CHECK(error_of("patch: {format: udiff}") == "cfg.yaml: patch.format: expected 'files' or 'diff', got 'udiff'");
  const Result<Config> raised =
      parse("patch: {max_files: 200, max_bytes: 4194304, max_diff_bytes: 65536, max_changed_lines: 5000, format: diff}");
  REQUIRE(raised.ok());
  CHECK(raised->patch.max_files == 200);
  CHECK(raised->patch.max_bytes == 4194304);
  CHECK(raised->patch.max_diff_bytes == 65536);
  CHECK(raised->patch.max_changed_lines == 5000);
  CHECK(raised->patch.format == "diff");
}

TEST_CASE("seed is a path, or a mapping with path, source, exclude, include_git and caps", "[config]") {
  const Result<Config> r = parse(R"(
seed:
  path: ../project
  source: git
  exclude: [build/, "*.log", docs/**/tmp]
  include_git: true
  max_files: 200000
  max_bytes: 4294967296
)");
  REQUIRE(r.ok());
  CHECK(r->seed == "/srv/proj/project");
  CHECK(r->seed_options.source == "git");
  CHECK(r->seed_options.exclude == std::vector<std::string>{"build/", "*.log", "docs/**/tmp"});
  CHECK(r->seed_options.include_git);
  CHECK(r->seed_options.max_files == 200000);
  CHECK(r->seed_options.max_bytes == 4294967296LL);
  const Config d;
  CHECK(d.seed_options.source == "auto");
  CHECK(d.seed_options.max_files == 100000);
  CHECK(d.seed_options.max_bytes == 2147483648LL);
  CHECK_FALSE(d.seed_options.include_git);
  CHECK(error_of("seed: {path: x, source: svn}") == "cfg.yaml: seed.source: expected 'auto', 'git' or 'directory', got 'svn'");
  CHECK(error_of("seed: {path: x, exclude: [\"a/../b\"]}") == "cfg.yaml: seed.exclude[0]: 'a/../b' has a '..' component");
  CHECK(error_of("seed: {path: x, exclude: build}") == "cfg.yaml: seed.exclude: expected a list of glob patterns, got 'build'");
  CHECK(error_of("seed: {path: x, max_files: 10000001}") ==
        "cfg.yaml: seed.max_files: cannot be raised past the cap of 10000000, got 10000001");
  CHECK(error_of("seed: {paht: x}") ==
        "cfg.yaml: seed.paht: unknown key (valid keys: path, source, exclude, include_git, max_files, max_bytes)");
}

TEST_CASE("unknown keys are errors naming the full key path and the valid keys", "[config]") {
  CHECK(error_of("sed: ../seed") ==
        "cfg.yaml: sed: unknown key (valid keys: seed, allow, test_command, report, images, limits, "
        "timeouts, "
        "patch, provider, engine, user_namespace, repair, planner, k8s, environment, mcp, sessions, signing, eval)");
  CHECK(error_of("limits: {memory: 5}") ==
        "cfg.yaml: limits.memory: unknown key (valid keys: memory_mib, pids, cpus, nofile, nproc, "
        "work_tmpfs_mib, tmp_tmpfs_mib, log_bytes)");
  CHECK(error_of("provider: {secrets: {token: X}}") ==
        "cfg.yaml: provider.secrets.token: unknown key (valid keys: base_url, model, api_key)");
  CHECK(error_of("seed: a\nseed: b\n") == "cfg.yaml: seed: duplicate key");
}

TEST_CASE("secret names, runtime and allow paths are checked", "[config]") {
  CHECK(
      error_of("provider: {secrets: {api_key: my-key}}") ==
      "cfg.yaml: provider.secrets.api_key: expected a secret name matching [A-Za-z_][A-Za-z0-9_]*, "
      "got 'my-key'");
  CHECK(error_of("provider: {secrets: {model: 1MODEL}}") ==
        "cfg.yaml: provider.secrets.model: expected a secret name matching [A-Za-z_][A-Za-z0-9_]*, "
        "got '1MODEL'");
  CHECK(error_of("engine: {runtime: kata}") ==
        "cfg.yaml: engine.runtime: expected 'runc', 'crun' or 'runsc', got 'kata'");
  CHECK(error_of("allow: []") ==
        "cfg.yaml: allow: expected a non-empty list of relative paths, got an empty list");
  CHECK(error_of("allow: calculator.py") ==
        "cfg.yaml: allow: expected a non-empty list of relative paths, got 'calculator.py'");
  CHECK(error_of("allow: [ok.py, ../x, /etc/, 'a//b', 'c\\d', '', [x]]") ==
        "cfg.yaml: allow[1]: path '../x' has a '..' component\n"
        "cfg.yaml: allow[2]: path '/etc' is absolute; paths must be relative to the seed\n"
        "cfg.yaml: allow[3]: path 'a//b' has an empty component ('//' or a trailing '/')\n"
        "cfg.yaml: allow[4]: path 'c\\\\d' contains a backslash; separate components with '/'\n"
        "cfg.yaml: allow[5]: expected a non-empty path, got ''\n"
        "cfg.yaml: allow[6]: expected a non-empty path, got a list");
}

TEST_CASE("all errors are reported, one per line", "[config]") {
  CHECK(error_of("limits: {memory_mib: lots, pids: 0}\nengine: {runtime: kata}\nextra: 1\n") ==
        "cfg.yaml: limits.memory_mib: expected a positive integer, got 'lots'\n"
        "cfg.yaml: limits.pids: must be between 1 and 65536, got 0\n"
        "cfg.yaml: engine.runtime: expected 'runc', 'crun' or 'runsc', got 'kata'\n"
        "cfg.yaml: extra: unknown key (valid keys: seed, allow, test_command, report, images, limits, "
        "timeouts, "
        "patch, provider, engine, user_namespace, repair, planner, k8s, environment, mcp, sessions, signing, eval)");
}

TEST_CASE("YAML syntax errors report line and column", "[config]") {
  CHECK(error_of("seed: x\nallow: [a, b\ntest_command: y\n") ==
        "cfg.yaml: line 3, column 13: invalid YAML: end of sequence flow not found");
  CHECK(error_of("limits:\n  pids: 1\n   nproc: 2\n") ==
        "cfg.yaml: line 3, column 9: invalid YAML: illegal map value");
  CHECK(error_of("a: 1\n---\nb: 2\n") == "cfg.yaml: expected one YAML document, found 2");
  CHECK(error_of("limits: {pids: \"a\\x1bb\"}") ==
        "cfg.yaml: limits.pids: expected a positive integer, got 'a\\x1bb'");  // shown escaped
}

TEST_CASE("load_config_file reports unreadable files and resolves seed next to the file",
          "[config]") {
  const Result<Config> missing = load_config_file("/nonexistent/lazyagent.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kUsage);
  CHECK(missing.error().message ==
        "/nonexistent/lazyagent.yaml: cannot read config file: No such file or directory");

  TempDir dir;
  CHECK(load_config_file(dir.path.string()).error().message ==
        dir.path.string() + ": cannot read config file: it is a directory");
  const std::string file = dir.write("my.yaml", "seed: project\nlimits: {pids: x}\n");
  CHECK(load_config_file(file).error().message ==
        file + ": limits.pids: expected a positive integer, got 'x'");
  dir.write("my.yaml", "seed: project\n");
  const Result<Config> ok = load_config_file(file);
  REQUIRE(ok.ok());
  CHECK(ok->seed == (dir.path / "project").string());
}

TEST_CASE("default_config_path prefers $LAZYAGENT_CONFIG", "[config]") {
  const char* old = std::getenv("LAZYAGENT_CONFIG");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("LAZYAGENT_CONFIG", "/some/where.yaml", 1);
  CHECK(default_config_path() == "/some/where.yaml");
  if (old != nullptr) {
    ::setenv("LAZYAGENT_CONFIG", saved.c_str(), 1);
  } else {
    ::unsetenv("LAZYAGENT_CONFIG");
    const std::string chosen = default_config_path();
    CHECK((chosen.empty() || fs::is_regular_file(chosen)));
  }
}

// Found by fuzz/config_fuzzer.cpp: yaml-cpp 0.7's LoadAll loops forever on a
// stray ',' outside a flow collection, adding empty documents until memory
// runs out. The parse runs in a child with a memory cap and an alarm, so a
// regression fails this test (killed child) instead of hanging the suite.
TEST_CASE("a stray ',' is invalid YAML, not a hang (fuzz regression)", "[config][fuzz]") {
  const auto error_in_child = [](const std::string& yaml) -> std::string {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      const struct rlimit mem = {512u << 20, 512u << 20};
      ::setrlimit(RLIMIT_AS, &mem);
      ::alarm(10);
      const Result<Config> r = parse(yaml);
      const std::string text = r.ok() ? "accepted" : r.error().message;
      (void)!::write(fds[1], text.data(), text.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string text;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    return text;
  };
  CHECK(error_in_child(",") == "cfg.yaml: line 1, column 1: invalid YAML: unexpected ','");
  CHECK(error_in_child("# the defaults\n,x\n") ==
        "cfg.yaml: line 2, column 1: invalid YAML: unexpected ','");
  CHECK(error_in_child("seed: project\n---\n,\n") ==
        "cfg.yaml: line 3, column 1: invalid YAML: unexpected ','");
  // Counting documents the new way changes nothing else.
  CHECK(error_in_child("a: 1\n---\nb: 2\n") == "cfg.yaml: expected one YAML document, found 2");
  CHECK(error_in_child("") == "accepted");
}

TEST_CASE("the k8s section: namespace, Secret, RuntimeClass, plain-http opt-in, unknown keys named", "[config]") {
  auto c = lazyagent::parse_config(
      "k8s: {namespace: lz, secret: prov, runtime_class: none, plain_http_provider_ip: 10.0.0.1}\n", "cfg.yaml", "/tmp");
  REQUIRE(c.ok());
  CHECK(c->k8s.ns == "lz");
  CHECK(c->k8s.secret == "prov");
  CHECK(c->k8s.runtime_class == "none");
  CHECK(c->k8s.plain_http_provider_ip == "10.0.0.1");
  auto d = lazyagent::parse_config("", "cfg.yaml", "/tmp");
  REQUIRE(d.ok());
  CHECK(d->k8s.runtime_class == "lazyagent-nonet");
  CHECK(d->k8s.plain_http_provider_ip.empty());  // https only unless opted in
  auto bad = lazyagent::parse_config("k8s: {namespce: x}\n", "cfg.yaml", "/tmp");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "cfg.yaml: k8s.namespce: unknown key (valid keys: namespace, secret, runtime_class, plain_http_provider_ip, "
        "ttl_seconds_after_finished, isolation, egress_probe_targets, planner_egress, "
                                 "planner_egress_required, registry, registry_plain_http, registry_ca_file, "
                                 "registry_username, registry_password_file, registry_ttl_hours)");
  CHECK(d->k8s.ttl_seconds_after_finished == 3600);
  auto ttl = lazyagent::parse_config("k8s: {ttl_seconds_after_finished: 30}\n", "cfg.yaml", "/tmp");
  REQUIRE(ttl.ok());
  CHECK(ttl->k8s.ttl_seconds_after_finished == 30);
  auto bad_ttl = lazyagent::parse_config("k8s: {ttl_seconds_after_finished: -1}\n", "cfg.yaml", "/tmp");
  REQUIRE_FALSE(bad_ttl.ok());
  CHECK(bad_ttl.error().message.find("k8s.ttl_seconds_after_finished") != std::string::npos);
}

TEST_CASE("k8s.isolation: the three modes, their RuntimeClass, the egress probe's targets, each error named",
          "[config]") {
  auto cfg = [](const std::string& yaml) { return lazyagent::parse_config(yaml, "cfg.yaml", "/tmp"); };
  CHECK(cfg("")->k8s.isolation == "runtime-nonet");
  CHECK(cfg("k8s: {isolation: networkpolicy}\n")->k8s.isolation == "networkpolicy");
  CHECK(cfg("k8s: {isolation: networkpolicy, runtime_class: none}\n").ok());
  CHECK(cfg("k8s: {isolation: runtimeclass, runtime_class: gvisor}\n")->k8s.runtime_class == "gvisor");
  auto bad = cfg("k8s: {isolation: calico}\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "cfg.yaml: k8s.isolation: expected 'runtime-nonet', 'runtimeclass' or 'networkpolicy', got 'calico'");
  auto none = cfg("k8s: {isolation: runtimeclass, runtime_class: none}\n");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "cfg.yaml: k8s.isolation: runtimeclass needs k8s.runtime_class naming your "
                                "cluster's RuntimeClass (e.g. gvisor, kata), not none");
  auto mixed = cfg("k8s: {isolation: networkpolicy, runtime_class: gvisor}\n");
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.error().message == "cfg.yaml: k8s.runtime_class: networkpolicy runs with no RuntimeClass; with "
                                 "gvisor set k8s.isolation: runtimeclass");
  auto targets = cfg("k8s:\n  egress_probe_targets: ['192.0.2.7:22', '[fd00::7]:10250', 'node-1.example:6443']\n");
  REQUIRE(targets.ok());
  CHECK(targets->k8s.egress_probe_targets ==
        std::vector<std::string>{"192.0.2.7:22", "[fd00::7]:10250", "node-1.example:6443"});
  auto bad_targets = cfg("k8s:\n  egress_probe_targets: ['fd00::7:443', '10.0.0.1:0', 'x y:1']\n");
  REQUIRE_FALSE(bad_targets.ok());
  const std::string e = bad_targets.error().message;
  CHECK(e.find("cfg.yaml: k8s.egress_probe_targets[0]: expected HOST:PORT (an IPv6 address in brackets, "
               "[fd00::1]:443; port 1-65535), got 'fd00::7:443'") != std::string::npos);
  CHECK(e.find("k8s.egress_probe_targets[1]") != std::string::npos);
  CHECK(e.find("k8s.egress_probe_targets[2]") != std::string::npos);
}

TEST_CASE("report: auto, output, or junit:PATH relative to the project, nothing else", "[config]") {
  const Result<Config> r = parse("report: junit:build/test-results.xml\n");
  REQUIRE(r.ok());
  CHECK(r->report == "junit:build/test-results.xml");
  CHECK(parse("{}")->report == "auto");
  CHECK(parse("report: auto\n")->report == "auto");
  CHECK(parse("report: output\n")->report == "output");
  const std::string want =
      "expected auto, output, or junit:PATH, PATH relative to the project (letters, digits, . _ - + /, no '..'), got ";
  CHECK(error_of("report: junit:../x.xml") == "cfg.yaml: report: " + want + "'junit:../x.xml'");
  CHECK(error_of("report: junit:/tmp/x.xml") == "cfg.yaml: report: " + want + "'junit:/tmp/x.xml'");
  CHECK(error_of("report: \"junit:a b.xml\"") == "cfg.yaml: report: " + want + "'junit:a b.xml'");
  CHECK(error_of("report: \"junit:x';rm -rf ~;'\"") == "cfg.yaml: report: " + want + "'junit:x';rm -rf ~;''");
  CHECK(error_of("report: xunit:x.xml") == "cfg.yaml: report: " + want + "'xunit:x.xml'");
  CHECK(error_of("report: 'junit:'") == "cfg.yaml: report: " + want + "'junit:'");
  CHECK(error_of("report: Auto") == "cfg.yaml: report: " + want + "'Auto'");
}
