// The real-projects corpus (issue 15 item 4): open-source projects no one
// here wrote, taken from Debian 12's source packages at test time
// (scripts/debian-source.sh: a private deb-src apt configuration, cached
// under /var/cache/lazyagent-oci/debian-src, never committed). Each one gets
// an environment (config `environment:`, built with network on first use and
// cached as localhost/lazyagent-env:<key>: a second run reuses it), a bug
// injected and committed in its git repository, the fix and a wrong fix as
// `git diff`s. For each: the fix passes and the triage names exactly the
// tests the bug broke (the baseline fails them), the wrong fix fails with
// them still failing. The environment images are the corpus's cache and are
// kept (`lazyagent-oci env prune --all` removes them).
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "corpus_projects.h"
#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
using namespace corpus;
namespace fs = std::filesystem;

namespace {

void prove(const CorpusProject& p) {
  Prepared prep;
  prepare(p, &prep);
  const std::string& fix_file = prep.fix_file;
  const std::string& wrong_file = prep.wrong_file;
  const std::string config = prep.dir.file("corpus.yaml", "seed: " + prep.repo + "\n" + p.config);

  CliEnv env;
  TempDir state;
  env.state_dir = state.path();
  const auto good = run_cli(env, {"test", "--config", config, "--patch", fix_file, "--json"}, 900);
  INFO(good.err.substr(good.err.size() > 6000 ? good.err.size() - 6000 : 0));
  REQUIRE(good.exit_code == 0);
  const json r = json_out(good);
  CHECK(r["status"] == "passed");
  CHECK(r["category"] == "passed");
  CHECK(r["environment"]["key"].get<std::string>().size() == 32);
  CHECK(r["image"] == r["environment"]["image"]);
  CHECK(r["isolation_probe"]["violations"].empty());
  // pytest commands: the runner's own JUnit report decides (runner_driver.h),
  // and names tests classname.name; the others: the output.
  CHECK(r["evidence"] == (p.config.find("-m pytest") != std::string::npos ? "driver" : "output"));
  CHECK(sorted_strings(r["triage"]["fixed"]) == p.fixed);
  CHECK(r["triage"]["newly_broken"].empty());
  CHECK(r["triage"]["still_failing"].empty());

  const auto bad = run_cli(env, {"test", "--config", config, "--patch", wrong_file, "--json"}, 900);
  CHECK(bad.exit_code == 1);
  const json w = json_out(bad);
  CHECK(w["status"] == "failed");
  CHECK(w["environment"]["built"] == false);  // reused
  CHECK(w["environment"]["key"] == r["environment"]["key"]);
  CHECK(w["triage"]["fixed"].empty());
  CHECK(sorted_strings(w["triage"]["still_failing"]) == p.fixed);
}


}  // namespace

TEST_CASE("corpus: python-ordered-set (Python, pytest), an index off by one after discard") {
  prove(ordered_set_project());
}

TEST_CASE("corpus: python-hashids (Python, pytest), decoding with the wrong base") {
  prove({"python-hashids", "hashids.py", "        number *= len_alphabet\n", "        number *= len_alphabet - 1\n",
         "        number *= len_alphabet + 1\n",
         "allow: [hashids.py]\ntest_command: python3 -m pytest -v -p no:cacheprovider test\npatch: {format: diff}\n" +
             kPytestEnv,
         {"test.test_hashids.TestDecoding.test_all_parameters",
          "test.test_hashids.TestDecoding.test_alphabet",
          "test.test_hashids.TestDecoding.test_alphabet_with_two_standard_separators",
          "test.test_hashids.TestDecoding.test_alphabet_without_standard_separators",
          "test.test_hashids.TestDecoding.test_decode_hex",
          "test.test_hashids.TestDecoding.test_min_length",
          "test.test_hashids.TestDecoding.test_multiple_numbers",
          "test.test_hashids.TestDecoding.test_salt",
          "test.test_hashids.TestDecoding.test_single_number",
          "test.test_legacy.TestDecryption.test_all_parameters",
          "test.test_legacy.TestDecryption.test_alphabet",
          "test.test_legacy.TestDecryption.test_alphabet_with_two_standard_separators",
          "test.test_legacy.TestDecryption.test_alphabet_without_standard_separators",
          "test.test_legacy.TestDecryption.test_min_length",
          "test.test_legacy.TestDecryption.test_multiple_numbers",
          "test.test_legacy.TestDecryption.test_salt",
          "test.test_legacy.TestDecryption.test_single_number"}});
}

TEST_CASE("corpus: golang-github-google-uuid (Go, go test -v), Version reads the wrong nibble") {
  // The project's ordinary command: Go builds its test binaries under
  // $TMPDIR, which the sandbox points at an executable directory in /work
  // (/tmp is noexec; docs/test-runners.md "Compiled languages"); its build cache goes to
  // $HOME/.cache (HOME is /work). gcc: Go 1.19 builds runtime/cgo for a test
  // binary by default (golang-go recommends it; without it `go test` fails
  // with `cgo: C compiler "gcc" not found`).
  prove({"golang-github-google-uuid", "uuid.go", "\treturn Version(uuid[6] >> 4)\n", "\treturn Version(uuid[6] & 0xf)\n",
         "\treturn Version(uuid[7] >> 4)\n",
         "allow: [uuid.go]\n"
         "test_command: go test -v ./...\n"
         "patch: {format: diff}\n"
         "limits: {work_tmpfs_mib: 256, memory_mib: 1024}\n"
         "environment:\n"
         "  setup: [apt-get update, \"apt-get install -y --no-install-recommends golang-go gcc libc6-dev\"]\n",
         {"github.com/google/uuid.TestDCE", "github.com/google/uuid.TestNew", "github.com/google/uuid.TestRandomUUID",
          "github.com/google/uuid.TestRandomUUID_Pooled", "github.com/google/uuid.TestUUID"}});
}

TEST_CASE("corpus: cjson (C, CMake and ctest), a lower-case hex digit loses its 10") { prove(cjson_project()); }

TEST_CASE("corpus: cjson through the planner's tool loop, cJSON.c over the context budget of a 200-file "
          "repository, found with the tools and fixed") {
  // issue 16: `run` on a real multi-hundred-file project, the scripted
  // provider driving the read-only tools as a model would: the baseline's
  // failing tests in the task, list, search, read the lines, submit a diff.
  const CorpusProject p = cjson_project();
  Prepared prep;
  prepare(p, &prep);
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(prep.repo)) {
    if (e.is_regular_file() && e.path().string().find("/.git/") == std::string::npos) ++files;
  }
  CHECK(files >= 200);
  const std::string source = read_file(prep.repo + "/cJSON.c");
  const auto at = source.find(p.bug);
  REQUIRE(at != std::string::npos);
  const long line = 1 + static_cast<long>(std::count(source.begin(), source.begin() + static_cast<long>(at), '\n'));
  const std::string bug_text = p.bug.substr(0, p.bug.size() - 1);
  const auto call = [](const std::string& name, json args) { return json{{"name", name}, {"arguments", std::move(args)}}; };
  const json replies = json::array(
      {{{"tool_calls", {call("list_files", {{"glob", "*.c"}})}}, {"require", "parse_hex4"}},
       {{"tool_calls", {call("search", {{"regex", "h \\+= \\(unsigned int\\) input\\[i\\] - 'a'"}, {"glob", "*.c"}})}},
        {"require_last", "cJSON.c " + std::to_string(source.size())}},
       {{"tool_calls", {call("read_file", {{"path", "cJSON.c"}, {"start_line", line - 5}, {"end_line", line + 5}})}},
        {"require_last", "cJSON.c:" + std::to_string(line) + ": " + bug_text}},
       {{"tool_calls", {call("submit_patch", {{"diff", prep.fix}})}},
        {"require_last", std::to_string(line) + ": " + bug_text}}});
  const std::string key = "sk-lazyagent-corpus-loop-KEY";
  auto script = lazyagent::parse_stub_script(json{{"api_key", key}, {"replies", replies}}.dump());
  REQUIRE(script.ok());
  PodmanProvider provider(*script, key, 1, p.config + "planner:\n  tools: true\n  context_bytes: 16384\n  max_turns: 6\n",
                          prep.repo);
  CliResult r = provider.run({"Fix the bug in cJSON's hex escape parsing without changing the tests.", "--timeout", "600"});
  INFO(r.out.substr(0, 3000) << r.err.substr(r.err.size() > 6000 ? r.err.size() - 6000 : 0));
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["tests_passed"] == true);
  CHECK(j["changed_paths"] == json::array({"cJSON.c"}));
  CHECK(j["planner"]["loop"]["turns"] == 4);
  CHECK(j["planner"]["loop"]["stop_reason"] == "submitted");
  CHECK(sorted_strings(j["triage"]["fixed"]) == p.fixed);
  // cJSON.c (over 16 KB) was not in the prompt: the budget cut it, the tools read it.
  const std::vector<std::string> log = provider.stub().request_log();
  REQUIRE(log.size() == 4);
  CHECK(log[0].find("=== cJSON.c (editable) ===") == std::string::npos);
  CHECK(r.out.find(key) == std::string::npos);
  WARN("cjson through the tool loop: " << j["planner"]["loop"].dump() << "; usage " << j["usage"].dump() << "; timings "
                                       << j["timings"].dump());
}

TEST_CASE("corpus: rust-fnv (Rust, cargo test), the FNV prime with a zero too many") {
  // A crate with no dependencies: `cargo test --offline` in the sandbox (no
  // network); --no-fail-fast so the doc tests run even when a unit test fails.
  // Cargo's home and the target directory are under /work (HOME, the working copy).
  prove({"rust-fnv", "lib.rs", "            hash = hash.wrapping_mul(0x100000001b3);\n",
         "            hash = hash.wrapping_mul(0x1000000001b3);\n", "            hash = hash.wrapping_mul(0x10000001b3);\n",
         "allow: [lib.rs]\n"
         "test_command: cargo test --offline --no-fail-fast\n"
         "patch: {format: diff}\n"
         "limits: {work_tmpfs_mib: 256, memory_mib: 1024}\n"
         "environment:\n"
         "  setup: [apt-get update, \"apt-get install -y --no-install-recommends cargo\"]\n",
         {"test::basic_tests"}});
}
