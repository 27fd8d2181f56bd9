#include "attack_common.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sec {

using nlohmann::json;

json run_attack(const it::CliEnv& env, const std::string& prelude, std::vector<std::string> extra) {
  it::TempDir dir;
  const std::string p = dir.file("patch.json", it::attack_patch(prelude));
  std::vector<std::string> args = {"test", "--seed", it::seed_dir(), "--patch", p, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto t0 = std::chrono::steady_clock::now();
  it::CliResult r = it::run_cli(env, args);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 4000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("test_output"));
  j["_exit"] = r.exit_code;
  j["_ms"] = ms;
  return j;
}

std::string output(const json& j) { return j["test_output"].get<std::string>(); }

std::string lines_with(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

void evidence(const std::string& text) {
  const char* path = std::getenv("LAZYAGENT_SECURITY_EVIDENCE");
  if (!path || !*path) return;
  std::ofstream f(path, std::ios::app);
  f << json{{"test", Catch::getResultCapture().getCurrentTestName()}, {"evidence", text}}.dump(
           -1, ' ', false, json::error_handler_t::replace)
    << "\n";
}

std::string run_control(const std::string& podman_flags, const std::string& python_probe) {
  it::TempDir dir;
  dir.file("probe.py", python_probe);
  return it::sh("timeout 120 podman run --rm " + podman_flags + " -v " + dir.path() +
                ":/p:ro,z localhost/lazyagent-sandbox:latest python3 /p/probe.py 2>&1");
}

std::vector<int> host_pids_with(const std::string& marker) {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (ss.str().find(marker) != std::string::npos) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

}  // namespace sec
