// Shared helpers for the integration tests: run the real CLI binary against
// the real podman service, in a private state directory, and clean up.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace it {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A temporary directory removed (recursively) in the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

// Environment for a CLI run: a private XDG_STATE_HOME, CONTAINER_HOST
// forwarded, LAZYAGENT_CONFIG pointing at the repo's config; extra vars added.
struct CliEnv {
  std::string state_dir;
  std::map<std::string, std::string> extra;
};

// Runs `lazyagent-oci args...` to completion (bounded by timeout_s).
CliResult run_cli(const CliEnv& env, const std::vector<std::string>& args, int timeout_s = 300);

// Starts it in the background; returns the pid (stdout/stderr to files in dir).
pid_t spawn_cli(const CliEnv& env, const std::vector<std::string>& args, const std::string& out_dir);
// Waits for a spawned CLI; returns its exit code (or 128+signal).
int wait_cli(pid_t pid, int timeout_s);

// The seed, a fixing patch, a wrong patch, and a patch whose calculator.py
// runs `python_prelude` at import and otherwise fixes add.
std::string seed_dir();
std::string fixing_patch();
std::string wrong_patch();
std::string attack_patch(const std::string& python_prelude);
std::string patch_json(const std::string& path, const std::string& content);

// podman CLI helpers for checking what exists.
std::string sh(const std::string& command);  // runs via /bin/sh, returns stdout
std::vector<std::string> containers_with_label(const std::string& label);
std::string hash_tree(const std::string& dir);  // sha256 over paths + contents + modes

// A TCP listener on the host's loopback (an ephemeral port) that counts
// connections: what a sandbox sharing the host's network would reach.
class HostListener {
 public:
  HostListener();
  ~HostListener();
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace it
