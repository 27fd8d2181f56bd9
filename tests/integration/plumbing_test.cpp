// The output plumbing is out of the test's way (sandbox_command): from inside
// the real sandbox, a test walks /tmp, /work and /run and reads every file to
// the end without blocking (a FIFO there used to hold such a scan until the
// timeout), finds /tmp and /work holding only the seed copy, the empty
// $TMPDIR and what it wrote itself, and a test that empties /tmp keeps its
// output capture. A program written to $TMPDIR runs; one written to /tmp
// does not (noexec).
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "harness.h"
#include "contract/patch_contract.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

// The seed's entries, relative, as Python set literal items: 'a', 'b', ...
std::string seed_entries_python() {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(seed_dir()))
    names.insert(fs::relative(e.path(), seed_dir()).string());
  std::string out;
  for (const auto& n : names) out += "'" + n + "', ";
  return out;
}

// A unittest module that writes a few files, then walks and reads everything.
std::string walk_test_module() {
  return "import os, subprocess, unittest\n"
         "SEED = {" + seed_entries_python() + "}\n"
         "class Walk(unittest.TestCase):\n"
         "    def test_walk_and_read_everything(self):\n"
         "        tmpdir = os.environ['TMPDIR']\n"
         "        print('TMPDIR', tmpdir, sorted(os.listdir(tmpdir)))\n"
         "        for d in (tmpdir, '/tmp'):\n"
         "            exe = os.path.join(d, 'prog')\n"
         "            with open(exe, 'w') as f: f.write('#!/bin/sh\\necho ran\\n')\n"
         "            os.chmod(exe, 0o755)\n"
         "            try: print('EXEC', d, subprocess.run([exe], capture_output=True, text=True).stdout.strip())\n"
         "            except PermissionError: print('EXEC', d, 'denied')\n"
         "            os.remove(exe)\n"
         "        os.makedirs('/tmp/mine', exist_ok=True)\n"
         "        with open('/tmp/mine/deep.txt', 'w') as f: f.write('mine')\n"
         "        with open('/tmp/top.txt', 'w') as f: f.write('top')\n"
         "        with open('/work/out.txt', 'w') as f: f.write('out')\n"
         "        seen, read, errors = {}, 0, []\n"
         "        for top in ('/tmp', '/work', '/run'):\n"
         "            names = set()\n"
         "            for root, dirs, files in os.walk(top):\n"
         "                for d in dirs: names.add(os.path.relpath(os.path.join(root, d), top))\n"
         "                for f in files:\n"
         "                    p = os.path.join(root, f)\n"
         "                    names.add(os.path.relpath(p, top))\n"
         "                    if os.path.islink(p): continue\n"
         "                    try:\n"
         "                        with open(p, 'rb') as fh:\n"
         "                            while fh.read(65536): pass  # a FIFO would block here\n"
         "                        read += 1\n"
         "                    except OSError as e:\n"
         "                        errors.append('%s: %s' % (p, e.strerror))\n"
         "            seen[top] = names\n"
         "        print('WALKED read=%d errors=%r' % (read, errors))\n"
         "        for top in ('/tmp', '/work', '/run'): print('SEEN', top, sorted(seen[top]))\n"
         "        self.assertEqual(seen['/tmp'], {'mine', 'mine/deep.txt', 'top.txt'})\n"
         "        self.assertEqual(seen['/work'], SEED | {'test_walk.py', 'out.txt', '.lazyagent-tmp'})\n";
}

json run_walk(const std::vector<std::string>& extra) {
  TempDir state, io;
  lazyagent::Patch p;
  p.files.push_back({"test_walk.py", walk_test_module()});
  const std::string patch = io.file("patch.json", lazyagent::patch_to_json(p));
  std::vector<std::string> args = {"test", "--seed", seed_dir(), "--patch", patch, "--allow", "test_walk.py",
                                   "--test-command", "python3 -m unittest -v test_walk", "--timeout", "60",
                                   "--no-baseline", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult r = run_cli({state.path()}, args);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(r.exit_code == 0);
  return j;
}

}  // namespace

TEST_CASE("plumbing: the sandbox's /tmp, /work and /run can be walked and read to the end, and hold only "
          "the seed copy and what the test wrote",
          "[sandbox][plumbing][quick]") {
  const json j = run_walk({});
  const std::string out = j["test_output"];
  INFO(out);
  CHECK(j["tests_passed"] == true);
  CHECK(out.find("WALKED read=") != std::string::npos);
  CHECK(out.find("SEEN /tmp ['mine', 'mine/deep.txt', 'top.txt']") != std::string::npos);
  CHECK(out.find("TMPDIR /work/.lazyagent-tmp []\n") != std::string::npos);  // made for it, empty
  CHECK(out.find("EXEC /work/.lazyagent-tmp ran\n") != std::string::npos);
  CHECK(out.find("EXEC /tmp denied\n") != std::string::npos);
  CHECK(out.find("Ran 1 test") != std::string::npos);
  // It finished well inside the 60 s timeout (a blocked read waits for it).
  CHECK(j["timings"]["run"].get<long>() < 30000);
}

TEST_CASE("plumbing: under gVisor the walk finishes too", "[sandbox][plumbing][gvisor]") {
  TempDir cfg;
  const json j = run_walk({"--config", cfg.file("config.yaml", "engine:\n  runtime: runsc\n")});
  INFO(j["test_output"].get<std::string>());
  CHECK(j["tests_passed"] == true);
  CHECK(j["policy"]["runtime"] == "runsc");
  CHECK(j["timings"]["run"].get<long>() < 30000);
}

TEST_CASE("plumbing: a test that empties /tmp and floods its output keeps the head, the cut and the tail",
          "[sandbox][plumbing][quick]") {
  TempDir state, io;
  const std::string patch = io.file("patch.json", fixing_patch());
  // Empty /tmp (hidden files too), write 2 MB, then the real runner's report.
  const std::string cmd =
      "rm -rf /tmp/* /tmp/.[!.]* 2>/dev/null; ls -A /tmp | wc -l | sed 's/^/TMP-ENTRIES /';"
      " python3 -c \"import sys; sys.stdout.write('HEAD-MARK\\n' + 'x' * 2000000 + '\\n')\";"
      " rm -rf /tmp/* /tmp/.[!.]* 2>/dev/null; python3 -m unittest -v";
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--test-command", cmd,
                                         "--no-baseline", "--json"});
  INFO("stderr: " << r.err);
  const json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  const std::string out = j["test_output"];
  INFO(out.substr(0, 300) << " ... " << (out.size() > 600 ? out.substr(out.size() - 300) : ""));
  CHECK(out.rfind("TMP-ENTRIES 0\nHEAD-MARK\n", 0) == 0);
  CHECK(out.find("[lazyagent-oci: output cut: kept the first 983040 and the last 65536 bytes]") != std::string::npos);
  CHECK(j["test_output_truncated"] == true);
  CHECK(out.find("Ran 4 tests") != std::string::npos);
  CHECK(j["tests_passed"] == true);
  CHECK(r.exit_code == 0);
}

TEST_CASE("plumbing: a background process holding the output does not keep the sandbox alive",
          "[sandbox][plumbing]") {
  TempDir state, io;
  const std::string patch = io.file("patch.json", fixing_patch());
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--test-command",
                                         "python3 -m unittest -v; (sleep 100; echo LATE) &", "--timeout", "60",
                                         "--no-baseline", "--json"});
  INFO("stderr: " << r.err);
  const json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["tests_passed"] == true);
  CHECK(j["test_exit_code"] == 0);
  const long run_ms = j["timings"]["run"];
  CHECK(run_ms < 15000);  // the reader's 2 s grace, not the sleeper's 100 s
  CHECK(j["test_output"].get<std::string>().find("LATE") == std::string::npos);
}

TEST_CASE("plumbing: the test's exit status comes through unchanged", "[sandbox][plumbing]") {
  TempDir state, io;
  const std::string patch = io.file("patch.json", fixing_patch());
  for (int code : {0, 1, 3, 125, 200}) {
    CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", patch, "--test-command",
                                           "python3 -m unittest -v 2>&1; exit " + std::to_string(code),
                                           "--no-baseline", "--json"});
    const json j = json::parse(r.out, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["test_exit_code"] == code);
    CHECK(j["tests_passed"] == (code == 0));
  }
}
