// The rest of the README walk a newcomer made (issue 43 item 6), and the
// shell completion (item 3): each case runs the real binary as the user did.
#include "test_paths.h"

#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "harness.h"
#include "util/digest.h"

using nlohmann::json;
using namespace it;

namespace {

// Shell words single-quoted.
std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The binary run by /bin/sh in `dir` with the private state (and no config
// unless `config` names one): for what depends on the working directory.
CliResult run_in(const std::string& dir, const std::string& state, const std::string& args,
                 const std::string& config = "") {
  TempDir out;
  const std::string cmd = "cd " + q(dir) + " && XDG_STATE_HOME=" + q(state) + " LAZYAGENT_CONFIG=" + q(config) + " " +
                          q(LAZYAGENT_BINARY) + " " + args + " >" + q(out.path() + "/o") + " 2>" + q(out.path() + "/e") +
                          "; echo $?";
  CliResult r;
  r.exit_code = std::stoi(sh(cmd));
  r.out = read_file(out.path() + "/o");
  r.err = read_file(out.path() + "/e");
  return r;
}

// The demo seed's fix of add as `diff -u` writes it.
std::string fix_diff(const TempDir& dir) {
  return sh("cd " + q(dir.path()) + " && cp " + q(seed_dir() + "/calculator.py") +
            " old.py && sed '0,/return a - b/s//return a + b/' old.py > new.py && "
            "diff -u --label a/calculator.py --label b/calculator.py old.py new.py; rm -f old.py new.py");
}

// What bash completes for `words` (the last one being completed) with the
// script `completion bash` printed.
std::vector<std::string> bash_completes(const std::string& script, const std::string& state,
                                        const std::vector<std::string>& words) {
  std::string arr;
  for (const auto& w : words) arr += " " + q(w);
  const std::string out = sh("XDG_STATE_HOME=" + q(state) + " bash -c " +
                             q("source " + q(script) + "; COMP_WORDS=(" + arr + "); COMP_CWORD=" +
                               std::to_string(words.size() - 1) + "; _lazyagent_oci; printf '%s\\n' \"${COMPREPLY[@]}\""));
  std::vector<std::string> lines;
  std::string line;
  for (char c : out) {
    if (c == '\n') {
      if (!line.empty()) lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

using Words = std::vector<std::string>;

}  // namespace

TEST_CASE("completion bash: sourced in bash, it completes commands, options, values and ids", "[cli][completion][quick]") {
  TempDir state, dir;
  CliResult gen = run_cli({state.path()}, {"completion", "bash"});
  REQUIRE(gen.exit_code == 0);
  const std::string script = dir.file("lazyagent-oci.bash", gen.out);
  // Ids come from the run store's names (the records are not read).
  dir.file("ignored", "");
  sh("mkdir -p " + q(state.path() + "/lazyagent-oci/runs") + " " + q(state.path() + "/lazyagent-oci/sessions/s-20261207-010000-abcdef") +
     " && touch " + q(state.path() + "/lazyagent-oci/runs/r-20261207-010000-aaaaaa.json") + " " +
     q(state.path() + "/lazyagent-oci/runs/r-20261207-020000-bbbbbb.json"));
  const std::string bin = LAZYAGENT_BINARY;
  CHECK(bash_completes(script, state.path(), {bin, "te"}) == Words{"test"});
  CHECK(bash_completes(script, state.path(), {bin, "session", "e"}) == Words{"exec"});
  CHECK(bash_completes(script, state.path(), {bin, "test", "--pa"}) == Words{"--patch"});
  CHECK(bash_completes(script, state.path(), {bin, "env", ""}) == Words{"build", "list", "prune"});
  CHECK(bash_completes(script, state.path(), {bin, "test", "--runtime", ""}) == Words{"crun", "runc", "runsc"});
  CHECK(bash_completes(script, state.path(), {bin, "test", "--seed", "x", "--json", "--runtime", "ru"}) ==
        Words{"runc", "runsc"});
  CHECK(bash_completes(script, state.path(), {bin, "diff", ""}) ==
        Words{"r-20261207-010000-aaaaaa", "r-20261207-020000-bbbbbb"});
  CHECK(bash_completes(script, state.path(), {bin, "session", "exec", ""}) == Words{"s-20261207-010000-abcdef"});
  // After the id: nothing but options (exec's command goes after --).
  CHECK(bash_completes(script, state.path(), {bin, "session", "exec", "s-20261207-010000-abcdef", "--t"}) ==
        Words{"--timeout"});
  CHECK(bash_completes(script, state.path(), {bin, "diff", "r-20261207-010000-aaaaaa", ""}).empty());
  CliResult ids = run_cli({state.path()}, {"completion", "--ids", "runs"});
  CHECK(ids.out == "r-20261207-020000-bbbbbb\nr-20261207-010000-aaaaaa\n");
  CliResult bad = run_cli({state.path()}, {"completion", "tcsh"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "lazyagent-oci: completion: unknown shell 'tcsh' (bash, zsh or fish)\n");
}

TEST_CASE("help --man: lazyagent-oci(1) with every command's options, and man reads it", "[cli][man][quick]") {
  TempDir state, dir;
  CliResult man = run_cli({state.path()}, {"help", "--man"});
  REQUIRE(man.exit_code == 0);
  CHECK(man.out.find(".TH LAZYAGENT\\-OCI 1") != std::string::npos);
  CHECK(man.out.find(".SS \"session exec\"") != std::string::npos);
  CHECK(man.out.find("\\fB\\-\\-patch\\fR \\fIFILE\\fR") != std::string::npos);
  const std::string page = dir.file("lazyagent-oci.1", man.out);
  const std::string text = sh("MANWIDTH=200 man -l " + q(page) + " 2>&1");  // not a terminal: plain text
  CHECK(text.find("lazyagent-oci - prove an LLM coding agent's patch") != std::string::npos);
  CHECK(text.find("--accept-weaker-policy") != std::string::npos);
  CHECK(text.find("warning") == std::string::npos);
}

TEST_CASE("export takes a unified diff as test does (a .diff got malformed_json)", "[cli][export][quick]") {
  TempDir state, dir;
  const std::string diff = fix_diff(dir);
  REQUIRE(diff.find("+    return a + b") != std::string::npos);
  const std::string patch = dir.file("fix.diff", diff);
  CliResult r = run_cli({state.path()},
                        {"export", "k8s", "--out", dir.path() + "/out", "--seed", seed_dir(), "--patch", patch, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json_out(r);
  CHECK(j["patched"] == true);
  CHECK(j["patch_sha256"] == lazyagent::sha256_hex(diff));
  CHECK(j["changed_paths"] == json::array({"calculator.py"}));
  CHECK(read_tree(dir.path() + "/out").find("return a + b") != std::string::npos);
}

TEST_CASE("session exec ID CMD without -- says to put the command after --", "[cli][session][quick]") {
  TempDir state;
  CliResult r = run_cli({state.path()}, {"session", "exec", "s-20261207-010000-abcdef", "true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lazyagent-oci: session exec: put the command after `--`: lazyagent-oci session exec "
        "s-20261207-010000-abcdef -- true\n");
}

TEST_CASE("no config found: test says which config and allow list it used, and a refused patch is recorded and verified",
          "[cli][verify][quick]") {
  TempDir state, dir;
  const std::string patch = dir.file("notes.txt", "hello\n");
  CliResult r = run_in(dir.path(), state.path(), "test --seed " + q(seed_dir()) + " --patch notes.txt --json");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 4);
  CHECK(r.err.find("==> test: no config file found (--config FILE, $LAZYAGENT_CONFIG, ./config/lazyagent.yaml, the "
                   "installed share/lazyagent-oci/config/lazyagent.yaml): the built-in defaults apply; allow list: "
                   "calculator.py (the default: pass --allow PATH or a config)\n") != std::string::npos);
  const json j = json::parse(r.out);
  REQUIRE(j["findings"].size() == 1);
  CHECK(j["findings"][0]["code"] == "unknown_format");
  CHECK(j["patch_sha256"] == lazyagent::sha256_hex("hello\n"));
  CHECK(j["provenance"]["patch_sha256"] == j["patch_sha256"]);
  CliResult v = run_cli({state.path()}, {"verify", j["run_id"].get<std::string>(), "--json"});
  INFO(v.out);
  CHECK(v.exit_code == 0);
  CHECK(json_out(v)["matches"] == true);
}

TEST_CASE("a run from the project's directory: provenance in --json, apply from elsewhere, a missing runner named",
          "[cli][apply][podman]") {
  TempDir state, dir;
  const std::string project = dir.path() + "/calc";
  sh("cp -r " + q(seed_dir()) + " " + q(project));
  dir.file("fix.diff", fix_diff(dir));
  CliResult r = run_in(project, state.path(), "test --seed . --patch ../fix.diff --no-baseline --json",
                       std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  const std::string id = j["run_id"];
  // The provenance the docs promise in the result: the record's.
  REQUIRE(j.contains("provenance"));
  CliResult v = run_cli({state.path()}, {"verify", id, "--json"});
  CHECK(json_out(v)["provenance"] == j["provenance"]);
  // apply from another directory: the seed was recorded absolute.
  CliResult a = run_in("/", state.path(), "apply " + id);
  INFO(a.err);
  CHECK(a.exit_code == 0);
  CHECK(read_file(project + "/calculator.py").find("return a + b") != std::string::npos);

  // No pytest in the sandbox image: named, not "tests failed" (and the image's hash labelled).
  CliResult m = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", dir.path() + "/fix.diff",
                                         "--test-command", "python3 -m pytest -q", "--no-baseline"});
  INFO(m.out << m.err);
  CHECK(m.exit_code == 1);
  CHECK(m.out.find("reason: no test runner: the tests did not run (/usr/bin/python3: No module named pytest): "
                   "install it where the tests run, in the config's environment (docs/environments.md)\n") !=
        std::string::npos);
  CHECK(m.out.find("image: localhost/lazyagent-sandbox:latest (digest sha256:") != std::string::npos);
}
