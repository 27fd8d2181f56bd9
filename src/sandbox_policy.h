// The test sandbox's policy, and the libpod create request that asks for it.
//
// Threat model: the code under test was written by a model and is hostile. It
// may try to reach the network (exfiltrate, call home), read secrets (the
// CLI's environment, the provider key), write outside its working copy (the
// user's seed, the host disk), exhaust the host (fork, memory, disk, output,
// time) or attack the terminal that shows its output. The sandbox therefore
// gets: no network namespace peers (nsmode none: only `lo`), no capabilities,
// no-new-privileges, a read-only root, size-capped tmpfs for the working copy
// and /tmp, cgroup caps on memory, pids and cpu, rlimits, a kill timeout, a
// capped log, a fixed environment allowlist, labels for reaping, and no
// secrets or user paths. The seed arrives as a private read-only copy made by
// this tool (never the user's directory), copied into the tmpfs at start.
//
// The same policy value is what the verifier checks the effective container
// against (policy_verifier.h) and what exports turn into other formats.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"

namespace lazyagent {

// Where things live inside the sandbox.
inline constexpr const char* kSeedMount = "/seed";   // read-only private copy
inline constexpr const char* kWorkDir = "/work";     // tmpfs working copy
inline constexpr const char* kTmpDir = "/tmp";       // tmpfs

// Labels on every container the project creates (ARCHITECTURE section 4).
inline constexpr const char* kLabelRole = "io.lazyagent.role";
inline constexpr const char* kLabelRun = "io.lazyagent.run";
inline constexpr const char* kLabelOwner = "io.lazyagent.owner";     // uid@host
inline constexpr const char* kLabelPid = "io.lazyagent.pid";         // orchestrator pid
inline constexpr const char* kLabelPidStart = "io.lazyagent.pidstart"; // its start time

struct SandboxPolicy {
  std::string image;
  std::int64_t memory_bytes = 512LL << 20;
  std::int64_t pids = 256;
  std::int64_t cpu_period = 100000;
  std::int64_t cpu_quota = 100000;  // 1 CPU
  std::int64_t nofile = 1024;
  std::int64_t nproc = 256;
  std::int64_t work_tmpfs_bytes = 64LL << 20;
  std::int64_t tmp_tmpfs_bytes = 64LL << 20;
  std::int64_t log_bytes = 1 << 20;
  std::int64_t timeout_seconds = 120;
  std::string hostname = "sandbox";
  // The complete environment of the test process (the allowlist).
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", kWorkDir},
      {"LANG", "C.UTF-8"},
      {"PYTHONDONTWRITEBYTECODE", "1"},
      {"PYTHONUNBUFFERED", "1"},
  };
};

// Names podman itself adds to every container's environment; allowed.
const std::vector<std::string>& podman_added_env_names();

SandboxPolicy policy_from_config(const Config& config, std::int64_t timeout_seconds);

// The policy as JSON (the `policy` field of results: the limits in force).
nlohmann::json policy_to_json(const SandboxPolicy& p);

// Tmpfs option lists, shared by the request and the verifier.
std::vector<std::string> work_tmpfs_options(const SandboxPolicy& p);
std::vector<std::string> tmp_tmpfs_options(const SandboxPolicy& p);

// What the sandbox prints between the head and the tail of an output longer
// than its budget: "[lazyagent-oci: output cut: kept the first H and the last T bytes]".
inline constexpr const char* kOutputCutMarker = "[lazyagent-oci: output cut";

// The shell program the sandbox runs: copy the seed into the tmpfs, run the
// test command there with its output capped at `output_bytes` (head and
// tail kept), exit with its status.
// argv = {"/bin/sh", "-c", script, "lazyagent-test", test_command, HEAD, TAIL}.
std::vector<std::string> sandbox_command(const std::string& test_command,
                                         std::int64_t output_bytes);

struct SandboxRequest {
  SandboxPolicy policy;
  std::string name;                       // unique container name
  std::map<std::string, std::string> labels;
  std::string seed_copy_path;             // host path of the private copy ("" = upload)
  std::string test_command;
  std::string runtime = "runc";           // the OCI runtime the service must use (runtime_policy.h)
};

// libpod SpecGenerator JSON for POST /libpod/containers/create. Field names
// were checked against podman 4.3.1, which silently ignores unknown ones.
nlohmann::json build_create_spec(const SandboxRequest& req);

}  // namespace lazyagent
