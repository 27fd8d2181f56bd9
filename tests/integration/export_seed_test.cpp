// One reader of a seed: `export` writes the seed copy `test` proves. A git
// work tree seed (an ignored file, an untracked one, a patched one) is
// exported and tested with the same config and patch; the files the sandbox
// sees (paths and sha256, listed by the test command itself) are the files
// in the export's seed/ copy.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "harness.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

// "sha256  ./path" lines -> {"path sha256"}.
std::set<std::string> listing(const std::string& text, const std::string& prefix) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    line = line.substr(prefix.size());
    const auto sp = line.find("  ./");
    if (sp == std::string::npos) continue;
    out.insert(line.substr(sp + 4) + " " + line.substr(0, sp));
  }
  return out;
}

}  // namespace

TEST_CASE("export and test of one git work tree seed see the same files (ignored left out, untracked kept)",
          "[export]") {
  TempDir d;
  const std::string seed = d.path() + "/seed";
  sh("cp -r " + seed_dir() + " " + seed);
  d.file("seed/.gitignore", "ignored.txt\n");
  const std::string git = "git -C " + seed + " -c user.name=it -c user.email=it@example.invalid ";
  sh(git + "init -q && " + git + "add -A && " + git + "commit -qm seed");
  d.file("seed/ignored.txt", "ignored\n");
  d.file("seed/untracked.txt", "untracked\n");
  const std::string config =
      d.file("config.yaml",
             "seed: " + seed +
                 "\nallow: [calculator.py]\ntest_command: >-\n  find . -type f -exec sha256sum {} + | sort -k2 | sed 's/^/SEEN /' &&\n"
                 "  python3 -m unittest -v\n");
  const std::string patch = d.file("patch.json", fixing_patch());

  TempDir state;
  const std::string out = d.path() + "/export";
  CliResult e = run_cli({state.path()},
                        {"export", "oci", "--config", config, "--seed", seed, "--patch", patch, "--out", out, "--json"});
  INFO("export stdout: " << e.out << "\nstderr: " << e.err);
  REQUIRE(e.exit_code == 0);
  const std::set<std::string> exported =
      listing(sh("cd " + out + "/seed && find . -type f -exec sha256sum {} + | sort -k2"), "");

  CliResult t = run_cli({state.path()}, {"test", "--config", config, "--seed", seed, "--patch", patch, "--json"});
  INFO("test stdout: " << t.out << "\nstderr: " << t.err);
  const json r = json_out(t);
  CHECK(r["status"] == "passed");
  const std::set<std::string> tested = listing(r.value("test_output", ""), "SEEN ");

  auto has = [](const std::set<std::string>& s, const std::string& path) {
    for (const auto& e : s) {
      if (e.rfind(path + " ", 0) == 0) return true;
    }
    return false;
  };
  CHECK(has(tested, "untracked.txt"));
  CHECK(has(tested, ".gitignore"));
  CHECK_FALSE(has(tested, "ignored.txt"));
  CHECK_FALSE(has(tested, ".git/HEAD"));
  // The patched file as the fix wrote it, not the seed's, in both.
  const std::string original = sh("sha256sum " + seed + "/calculator.py").substr(0, 64);
  CHECK(has(tested, "calculator.py"));
  CHECK(tested.count("calculator.py " + original) == 0);
  REQUIRE(tested.size() >= 4);
  CHECK(tested == exported);
}
