#include "test_paths.h"
#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "catch_compat.h"

#include "util/digest.h"
#include "contract/patch_contract.h"
#include "contract/seed_snapshot.h"

namespace fs = std::filesystem;

namespace it {

TempDir::TempDir() {
  char tmpl[] = "/tmp/lazyagent-it-XXXXXX";
  path_ = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& name, const std::string& content) const {
  const std::string p = path_ + "/" + name;
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

namespace {

std::vector<std::string> build_env(const CliEnv& env) {
  std::map<std::string, std::string> vars;
  for (const char* keep : {"PATH", "HOME", "CONTAINER_HOST", "LANG", "LAZYAGENT_RUNSC_HOST"}) {
    if (const char* v = std::getenv(keep)) vars[keep] = v;
  }
  vars["XDG_STATE_HOME"] = env.state_dir;
  vars["LAZYAGENT_CONFIG"] = std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml";
  for (const auto& [k, v] : env.extra) vars[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

pid_t spawn(const CliEnv& env, const std::vector<std::string>& args, int out_fd, int err_fd) {
  std::vector<std::string> argv_s = {LAZYAGENT_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  const std::vector<std::string> env_s = build_env(env);
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv, envp;
    for (const auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env_s) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

pid_t spawn_cli(const CliEnv& env, const std::vector<std::string>& args, const std::string& out_dir) {
  const int out = open((out_dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err = open((out_dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const pid_t pid = spawn(env, args, out, err);
  close(out);
  close(err);
  return pid;
}

bool wait_for(const std::function<bool()>& cond, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

int wait_cli(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

CliResult run_cli(const CliEnv& env, const std::vector<std::string>& args, int timeout_s) {
  TempDir io;
  const pid_t pid = spawn_cli(env, args, io.path());
  CliResult r;
  r.exit_code = wait_cli(pid, timeout_s);
  r.out = read_file(io.path() + "/stdout");
  r.err = read_file(io.path() + "/stderr");
  return r;
}

std::string seed_dir() { return std::string(LAZYAGENT_SOURCE_DIR) + "/seed"; }

std::string patch_json(const std::string& path, const std::string& content) {
  lazyagent::Patch p;
  p.files.push_back({path, content});
  return lazyagent::patch_to_json(p);
}

namespace {
std::string calculator_with(const std::string& add_body, const std::string& prelude) {
  std::ifstream f(seed_dir() + "/calculator.py");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string src = ss.str();
  const std::string broken = "return a - b";
  const auto pos = src.find(broken);
  if (pos != std::string::npos) src.replace(pos, broken.size(), add_body);
  return prelude + (prelude.empty() ? "" : "\n") + src;
}
}  // namespace

std::string fixing_patch() { return patch_json("calculator.py", calculator_with("return a + b", "")); }
std::string wrong_patch() { return patch_json("calculator.py", calculator_with("return a * b", "")); }
std::string attack_patch(const std::string& prelude) {
  return patch_json("calculator.py", calculator_with("return a + b", prelude));
}

std::string debian_mirror_host() {
  std::string host = sh("cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources "
                        "2>/dev/null | grep -Ev '^[[:space:]]*#' | grep -Eo 'https?://[^/ ]+' | head -n 1 | "
                        "sed -E 's#https?://##'");
  while (!host.empty() && (host.back() == '\n' || host.back() == ' ')) host.pop_back();
  return host;
}

std::string sh(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::vector<std::string> containers_with_label(const std::string& label) {
  std::vector<std::string> ids;
  std::istringstream in(sh("podman ps -a --filter label=" + label + " --format '{{.ID}}' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) ids.push_back(line);
  }
  return ids;
}

std::string hash_tree(const std::string& dir) {
  auto snap = lazyagent::snapshot_seed_source(dir, lazyagent::SeedConfig{});
  return snap ? snap->sha256 : "unreadable: " + snap.error().message;
}

int bind_every_address(int type, int* port) {
  const int fd = socket(AF_INET6, type, 0);
  int off = 0;
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin6_port);
  return fd;
}

HostListener::HostListener(bool every_address) {
  if (every_address) {
    fd_ = bind_every_address(SOCK_STREAM, &port_);
  } else {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  listen(fd_, 16);
  thread_ = std::thread([this] {
    for (;;) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0 || stop_) break;
      ++accepted_;
      close(c);
    }
  });
}

HostListener::~HostListener() {
  stop_ = true;
  shutdown(fd_, SHUT_RDWR);
  close(fd_);
  thread_.join();
}

TestRun test_patch(const CliEnv& env, const std::string& patch, std::vector<std::string> extra,
                   const std::string& config_text) {
  TempDir dir;
  std::vector<std::string> args = {"test", "--seed", seed_dir(), "--patch", dir.file("patch.json", patch), "--json"};
  if (!config_text.empty()) {
    args.push_back("--config");
    args.push_back(dir.file("config.yaml", config_text));
  }
  args.insert(args.end(), extra.begin(), extra.end());
  TestRun r;
  r.cli = run_cli(env, args);
  r.result = nlohmann::json::parse(r.cli.out, nullptr, false);
  INFO("stdout: " << r.cli.out << "\nstderr: " << r.cli.err);
  REQUIRE(r.result.is_object());
  return r;
}

bool container_gone(const std::string& id) {
  return !id.empty() && sh("podman container exists " + id + " && echo yes || echo no") == "no\n";
}

nlohmann::json json_out(const CliResult& r) {
  INFO("exit " << r.exit_code << "\nstdout: " << r.out << "\nstderr: " << r.err);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  return j;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string read_tree(const std::string& dir) {
  std::string all;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) all += e.path().string() + "\n" + read_file(e.path().string());
  }
  return all;
}

std::size_t entries_in(const std::string& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) ++n;
  return n;
}

std::string planner_image() {
  const char* v = std::getenv("LAZYAGENT_IT_PLANNER_IMAGE");
  return v && *v ? v : "localhost/lazyagent-planner:latest";
}

std::string many_module_seed(const TempDir& dir) {
  const std::string root = dir.path() + "/seed";
  fs::create_directories(root + "/pkg");
  fs::create_directories(root + "/zzz");
  for (int i = 0; i < 300; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "mod_%03d", i);
    std::ofstream(root + "/pkg/" + name + ".py")
        << "\"\"\"Module " << i << ".\"\"\"\n\n\ndef value_" << i << "():\n    return " << i << "\n";
  }
  std::ofstream(root + "/test_target.py") << "import unittest\n\nfrom zzz.target import add\n\n\n"
                                             "class TargetTest(unittest.TestCase):\n"
                                             "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
                                             "if __name__ == \"__main__\":\n    unittest.main()\n";
  std::ofstream(root + "/zzz/__init__.py") << "";
  return root;
}

PodmanProvider::PodmanProvider(lazyagent::StubScript script, const std::string& key, int max_retries,
                               const std::string& extra_yaml, const std::string& seed)
    : stub_(std::move(script)) {
  static std::atomic<int> counter{0};
  auto port = stub_.listen("0.0.0.0", 0);
  REQUIRE(port.ok());
  const std::string prefix = "LAZYAGENT_IT_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
  names_ = {prefix + "_BASE_URL", prefix + "_MODEL", prefix + "_API_KEY"};
  config_ = dir_.file("config.yaml", "seed: " + (seed.empty() ? seed_dir() : seed) + "\nimages:\n  planner: " + planner_image() +
                                         "\nprovider:\n  secrets:\n    base_url: " + names_[0] +
                                         "\n    model: " + names_[1] + "\n    api_key: " + names_[2] +
                                         "\n  max_retries: " + std::to_string(max_retries) + "\n" + extra_yaml);
  url_ = "http://host.containers.internal:" + std::to_string(*port) + "/v1";
  configure(url_, key);
}

PodmanProvider::~PodmanProvider() {
  for (const auto& n : names_) sh("podman secret rm " + n + " >/dev/null 2>&1");
  stub_.stop();
}

void PodmanProvider::configure(const std::string& url, const std::string& key) {
  CliResult r = run_cli({state.path(), {{names_[0], url}, {names_[1], "lazyagent-stub"}, {names_[2], key}}},
                        {"configure", "--config", config_});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(key) == std::string::npos);
}

CliResult PodmanProvider::run(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run", "--config", config_, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli({state.path()}, args);
}

}  // namespace it
