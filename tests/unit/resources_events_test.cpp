// Resource figures read from a cgroup tree (cgroup_usage.h, on a fake tree
// laid out as the kernel's), eval's totals of them, the event kinds, the
// MCP protocol negotiation, and mcp.seeds in the config.
#include "catch_compat.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/mcp_server.h"
#include "config.h"
#include "engine/podman/cgroup_usage.h"
#include "engine/podman/log_stream.h"
#include "eval/eval_summary.h"
#include "pipeline/run_events.h"
#include "policy/sandbox_policy.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A v1 tree: root/{memory,cpuacct,pids}/lazyagent/r1/..., conmon and the container.
void v1_tree(const std::string& root) {
  const std::string m = root + "/memory/lazyagent/r1", c = root + "/cpuacct/lazyagent/r1", p = root + "/pids/lazyagent/r1";
  put(m + "/memory.max_usage_in_bytes", "300000000\n");
  put(m + "/conmon/memory.max_usage_in_bytes", "11000000\n");
  put(m + "/libpod-abc/memory.max_usage_in_bytes", "214000000\n");
  put(m + "/libpod-abc/memory.stat", "cache 100\nrss 200\nshmem 21000000\nmapped_file 0\n");
  put(c + "/cpuacct.usage", "2500000000\n");
  put(c + "/conmon/cpuacct.usage", "500000000\n");
  put(p + "/libpod-abc/pids.peak", "7\n");
}

}  // namespace

TEST_CASE("cgroup usage: v1 figures from the run's parent, the container sampled, then the tree removed") {
  Tmp t;
  v1_tree(t.path);
  CHECK(cgroup_layout(t.path) == "v1");
  CHECK(run_cgroup_parent("r1") == "/lazyagent/r1");
  CgroupWatch w(t.path, "/lazyagent/r1");
  w.start("abc");
  std::this_thread::sleep_for(std::chrono::milliseconds(5 * kSampleMs));
  w.stop();
  const json f = w.figures();
  INFO(f.dump(2));
  CHECK(f["available"] == true);
  CHECK(f["cpu_ms"] == 2000);  // the run's 2.5 s less conmon's 0.5 s
  CHECK(f["memory_peak_bytes"] == 214000000);
  CHECK(f["pids_peak"] == 7);
  CHECK(f["tmpfs_peak_bytes"] == 21000000);
  CHECK(f["samples"].get<int>() > 0);
  // remove_dirs removes directories only (the kernel's cgroup files go with
  // them): on a plain tree the files keep them, so nothing is forced.
  w.remove_dirs();
  CHECK(fs::exists(t.path + "/memory/lazyagent/r1/memory.max_usage_in_bytes"));
}

TEST_CASE("cgroup usage: a run too short to sample falls back to the parent's peak, and says so") {
  Tmp t;
  v1_tree(t.path);
  CgroupWatch w(t.path, "/lazyagent/r1");
  const json f = w.figures();  // never started: no sample
  CHECK(f["memory_peak_bytes"] == 300000000 - 11000000);
  CHECK(f["pids_peak"].is_null());
  CHECK(f["tmpfs_peak_bytes"].is_null());
  CHECK(f["notes"][0].get<std::string>().rfind("memory_peak_bytes: the run ended before the sampler", 0) == 0);
}

TEST_CASE("cgroup usage: no hierarchy is unavailable, never a figure") {
  Tmp t;
  CHECK(cgroup_layout(t.path).empty());
  CgroupWatch w(t.path, "/lazyagent/r1");
  const json f = w.figures();
  CHECK(f == json{{"available", false}, {"reason", "no readable cgroup hierarchy under " + t.path}});
}

TEST_CASE("the create request names the run's cgroup parent only when given") {
  SandboxRequest req;
  req.test_command = "true";
  CHECK_FALSE(build_create_spec(req).contains("cgroup_parent"));
  req.cgroup_parent = "/lazyagent/r-1";
  CHECK(build_create_spec(req)["cgroup_parent"] == "/lazyagent/r-1");
}

TEST_CASE("eval totals resources: CPU summed, peaks the largest, unavailable counted apart") {
  EvalRow a, b, c;
  a.id = "a";
  a.category = Category::kPassed;
  a.resources = {{"available", true}, {"cpu_ms", 1200}, {"memory_peak_bytes", 100}, {"pids_peak", 4}, {"tmpfs_peak_bytes", 9}};
  b.id = "b";
  b.category = Category::kFailed;
  b.resources = {{"available", true}, {"cpu_ms", 300}, {"memory_peak_bytes", 500}, {"pids_peak", 2}, {"tmpfs_peak_bytes", nullptr}};
  c.id = "c";
  c.category = Category::kPassed;
  c.resources = {{"available", false}, {"reason", "Kubernetes: ..."}};
  const EvalSummary s = summarize({"a", "b", "c"}, {a, b, c});
  const json j = summary_to_json(s)["resources"];
  CHECK(j == json{{"measured", 2}, {"unavailable", 1}, {"cpu_ms", 1500}, {"memory_peak_bytes_max", 500},
                  {"pids_peak_max", 4}, {"tmpfs_peak_bytes_max", 9}});
  CHECK(summary_table(s).find("resources (2 measured run(s)): cpu 1500 ms in all, memory peak 0 MiB, pids peak 4\n") !=
        std::string::npos);
}

TEST_CASE("event kinds have one name each") {
  CHECK(std::string(run_event_kind_name(RunEvent::Kind::kStepStart)) == "step_start");
  CHECK(std::string(run_event_kind_name(RunEvent::Kind::kStepEnd)) == "step_end");
  CHECK(std::string(run_event_kind_name(RunEvent::Kind::kOutput)) == "output");
  CHECK(std::string(run_event_kind_name(RunEvent::Kind::kNote)) == "note");
}

TEST_CASE("a followed log is cut into lines, a long one into pieces") {
  std::vector<std::string> lines;
  FollowedLog log;
  log.max_line = 4;
  log.line = [&](const std::string& l) { lines.push_back(l); };
  const std::string both = mux_frame(1, "ab\ncdefghij") + mux_frame(2, "k\nlast");
  log.feed(both.substr(0, 5));  // a frame split anywhere
  log.feed(both.substr(5));
  log.finish();
  CHECK(lines == std::vector<std::string>{"ab", "cdef", "ghijk", "last"});  // "cdefghij" was cut once past 4 bytes
}

TEST_CASE("MCP: the client's protocol revision when spoken, else the latest") {
  CHECK(negotiate_mcp_protocol("2025-06-18") == "2025-06-18");
  CHECK(negotiate_mcp_protocol("2025-03-26") == "2025-03-26");
  CHECK(negotiate_mcp_protocol("2024-11-05") == "2024-11-05");
  CHECK(negotiate_mcp_protocol("1999-01-01") == "2025-06-18");
  CHECK(negotiate_mcp_protocol("") == "2025-06-18");
}

TEST_CASE("config: mcp.seeds resolved against the file's directory, a bad entry named") {
  auto c = parse_config("mcp:\n  seeds: [projects, /srv/x]\n", "c.yaml", "/home/u");
  REQUIRE(c);
  CHECK(c->mcp.seeds == std::vector<std::string>{"/home/u/projects", "/srv/x"});
  auto bad = parse_config("mcp:\n  seeds: ['', 3]\n", "c.yaml", "/home/u");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("c.yaml: mcp.seeds[0]: expected a non-empty directory") != std::string::npos);
  auto none = parse_config("seed: .\n", "c.yaml", "/home/u");
  REQUIRE(none);
  CHECK(none->mcp.seeds.empty());
}
