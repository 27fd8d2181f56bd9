// Shared helpers for the integration tests: run the real CLI binary against
// the real podman service, in a private state directory, and clean up.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "provider/provider_stub.h"

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
// Polls `cond` every 25 ms until it holds (true) or timeout_s passed (false).
bool wait_for(const std::function<bool()>& cond, int timeout_s);

// The seed, a fixing patch, a wrong patch, and a patch whose calculator.py
// runs `python_prelude` at import and otherwise fixes add.
std::string seed_dir();
// DIR/seed: 300 small modules under pkg/, test_target.py (unittest: add(2, 3)
// == 5, from zzz.target) and an empty zzz/__init__.py; the caller writes
// zzz/target.py (the file to fix, which sorts last). Returns DIR/seed.
std::string many_module_seed(const TempDir& dir);
std::string fixing_patch();
std::string wrong_patch();
std::string attack_patch(const std::string& python_prelude);
std::string patch_json(const std::string& path, const std::string& content);

// One `lazyagent-oci test --seed <demo seed> --patch P --json` run (with the
// config `config_text` when given, and `extra` arguments): what the CLI did
// and the one JSON object it printed (required).
struct TestRun {
  CliResult cli;
  nlohmann::json result;
};
TestRun test_patch(const CliEnv& env, const std::string& patch, std::vector<std::string> extra = {},
                   const std::string& config_text = "");

// True when podman no longer has the container (false for an empty id).
bool container_gone(const std::string& id);

// The one JSON object a `--json` run printed on stdout (required).
nlohmann::json json_out(const CliResult& r);

// A file's bytes ("" when unreadable); every regular file under `dir`, each
// as its path, a newline and its bytes; how many entries `dir` holds.
std::string read_file(const std::string& path);
std::string read_tree(const std::string& dir);
std::size_t entries_in(const std::string& dir);

// podman CLI helpers for checking what exists.
std::string sh(const std::string& command);  // runs via /bin/sh, returns stdout
// The host of the first Debian mirror in this machine's apt sources (read,
// never written into the repository), or "" when there is none.
std::string debian_mirror_host();
std::vector<std::string> containers_with_label(const std::string& label);
std::string hash_tree(const std::string& dir);  // sha256 over paths + contents + modes

// A TCP listener on the host's loopback (an ephemeral port) that counts
// connections: what a sandbox sharing the host's network would reach. With
// `every_address`, on all of the host's addresses, IPv4 and IPv6: what a
// set-up that escaped its network would reach.
// A socket of `type` bound to every address, IPv4 and IPv6 (a dual-stack
// [::], port chosen by the kernel, written to *port); not yet listening.
int bind_every_address(int type, int* port);

class HostListener {
 public:
  explicit HostListener(bool every_address = false);
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

// The planner image the run tests use: $LAZYAGENT_IT_PLANNER_IMAGE (a build
// of this branch needs an image with this binary), else
// localhost/lazyagent-planner:latest (scripts/build-images.sh rebuilds it).
std::string planner_image();

// The scripted provider (lazyagent-oci's provider-stub, in this process, on
// an ephemeral port on every address), podman secrets with unique names
// pointing the planner at it (made with the real `configure`, the API key
// `key`), and a config naming them (provider.max_retries, then `extra_yaml`
// appended). The secrets are removed at the end.
class PodmanProvider {
 public:
  // `seed` "" = the demo seed (seed_dir()).
  PodmanProvider(lazyagent::StubScript script, const std::string& key, int max_retries,
                 const std::string& extra_yaml = "", const std::string& seed = "");
  ~PodmanProvider();
  PodmanProvider(const PodmanProvider&) = delete;
  PodmanProvider& operator=(const PodmanProvider&) = delete;
  // (Re)stores the secrets: the provider's URL and `key`.
  void configure(const std::string& url, const std::string& key);
  // `lazyagent-oci run --config C --json extra...` in `state`.
  CliResult run(const std::vector<std::string>& extra = {});
  const std::string& config() const { return config_; }
  const std::string& url() const { return url_; }
  lazyagent::ProviderStub& stub() { return stub_; }
  TempDir state;

 private:
  TempDir dir_;
  lazyagent::ProviderStub stub_;
  std::vector<std::string> names_;
  std::string config_, url_;
};

}  // namespace it
