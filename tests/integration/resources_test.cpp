// Resource figures (the result's `resources`, engine/podman/cgroup_usage.h):
// read by the host from the sandbox's cgroups, checked against tests whose
// use is known: one that holds 200 MiB under a 512 MiB cap, one that burns
// CPU for a known wall time.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <glob.h>

#include <chrono>
#include <thread>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

// A seed whose one test runs `body` (Python), and the result of proving a
// harmless patch (a comment added to notes.txt) against it, no baseline.
json prove(const TempDir& state, const std::string& body) {
  TempDir dir;
  const std::string seed = dir.path() + "/seed";
  sh("mkdir -p " + seed);
  dir.file("seed/notes.txt", "notes\n");
  dir.file("seed/test_use.py",
           "import unittest\n\nclass T(unittest.TestCase):\n    def test_use(self):\n" + body + "\n\n"
           "if __name__ == '__main__':\n    unittest.main()\n");
  const std::string patch = dir.file("patch.json", patch_json("notes.txt", "notes, patched\n"));
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed, "--patch", patch, "--allow", "notes.txt",
                                         "--test-command", "python3 -m unittest -v", "--no-baseline", "--json"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  REQUIRE(j["tests_passed"] == true);
  return j;
}

std::size_t cgroup_dirs_now(const std::string& run_id) {
  glob_t g{};
  const std::string pattern = "/sys/fs/cgroup/*/lazyagent/" + run_id;
  ::glob(pattern.c_str(), 0, nullptr, &g);
  const std::size_t n = g.gl_pathc;
  ::globfree(&g);
  return n;
}

// The run removes its cgroup directories in one pass and leaves what conmon
// still held for a moment to a detached remover (cgroup_usage.h): they must
// be gone within seconds of the run's end, not at once.
std::size_t cgroup_dirs_of(const std::string& run_id) {
  for (int i = 0; i < 100; ++i) {
    if (cgroup_dirs_now(run_id) == 0) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cgroup_dirs_now(run_id);
}

}  // namespace

TEST_CASE("resources: a test holding 200 MiB shows a memory peak near 200 MiB", "[resources]") {
  TempDir state;
  const json j = prove(state,
                       "        import time\n"
                       "        b = bytearray(200 * 1024 * 1024)\n"
                       "        for i in range(0, len(b), 4096): b[i] = 1\n"
                       "        time.sleep(0.5)\n"
                       "        self.assertEqual(b[0], 1)");
  const json& r = j["resources"];
  INFO(r.dump(2));
  REQUIRE(r["available"] == true);
  const auto peak = r["memory_peak_bytes"].get<std::int64_t>();
  CHECK(peak >= 200LL << 20);
  CHECK(peak < 300LL << 20);  // the interpreter, the seed copy, page cache: well under 100 MiB more
  CHECK(r["pids_peak"].get<std::int64_t>() >= 1);
  CHECK(r["samples"].get<int>() > 0);
  // The run's parent cgroup is gone with the sandbox.
  CHECK(cgroup_dirs_of(j["run_id"]) == 0);
}

TEST_CASE("resources: a CPU-bound test shows CPU time near its wall time, tmpfs use near what it wrote",
          "[resources]") {
  TempDir state;
  const json j = prove(state,
                       "        import time\n"
                       "        with open('/work/blob', 'wb') as f: f.write(b'x' * (20 * 1024 * 1024))\n"
                       "        t, c = time.time(), time.process_time()\n"
                       "        n = 0\n"
                       "        while time.process_time() - c < 2.0: n += 1\n"
                       "        print('USED wall=%d cpu=%d' % ((time.time() - t) * 1000, (time.process_time() - c) * 1000))\n"
                       "        self.assertGreater(n, 0)");
  const json& r = j["resources"];
  INFO(r.dump(2) << "\n" << j["test_output"].get<std::string>());
  REQUIRE(r["available"] == true);
  // What the loop itself measured: its own CPU time (it runs until it has
  // used 2 s) and its wall time (longer on a loaded machine, where a
  // CPU-bound loop shares the CPU: the host's figure is compared with the
  // loop's own, which is what it must match).
  const std::string out = j["test_output"];
  const auto at = out.find("USED wall=");
  REQUIRE(at != std::string::npos);
  long wall = 0, own = 0;
  REQUIRE(std::sscanf(out.c_str() + at, "USED wall=%ld cpu=%ld", &wall, &own) == 2);
  CHECK(own >= 2000);
  CHECK(wall >= own - 50);    // one thread: no more CPU than wall time
  const auto cpu = r["cpu_ms"].get<std::int64_t>();
  CHECK(cpu >= own);          // the cgroup counts the loop and everything around it
  CHECK(cpu <= own + 1500);   // the interpreter's start and the seed copy, nothing like a second loop
  const auto tmpfs = r["tmpfs_peak_bytes"].get<std::int64_t>();
  CHECK(tmpfs >= 20LL << 20);
  CHECK(tmpfs < 40LL << 20);
  CHECK(cgroup_dirs_of(j["run_id"]) == 0);
}
