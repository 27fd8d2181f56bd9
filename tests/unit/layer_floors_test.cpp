// The floors of src/ (docs/design.md "Layout"): every #include "..." under src/ names a
// header on its own floor or one below. A file that reaches up (an engine that
// includes the pipeline, a contract that includes the HTTP client) fails here,
// named by file and line, before the cycle it starts grows.
#include "test_paths.h"
#include "catch_compat.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Lowest first. A folder's files may include their own folder and any lower
// floor; siblings on one floor (the two engines) may not include each other.
struct Floor {
  int level;
  const char* prefix;  // path under src/: a folder ("util/") or a file ("config.h")
};
const std::vector<Floor> kFloors = {
    {0, "util/"},
    // The typed config and the contract share a floor: the config's schema
    // checks allow-list paths with the contract's path rules, and the
    // contract's builders read the config's values.
    {1, "config.h"},      {1, "config.cpp"},
    {1, "contract/"},
    // Signed verdicts (DSSE, in-toto, Ed25519 keys): the contract of evidence.
    {1, "attest/"},
    {2, "policy/"},
    {3, "provider/"},
    {4, "store/"},
    {5, "export/"},
    {6, "engine/engine.h"}, {6, "engine/warm_pool.h"}, {6, "engine/environments.h"},
    {7, "engine/podman/"}, {7, "engine/k8s/"},
    {8, "pipeline/"},
    {9, "eval/"},
    {9, "report/"},  // reads what eval wrote and the run store: beside eval, under the CLI
    {10, "cli/"},
};

// The floor's entry whose prefix matches `rel` (a path under src/), or null.
const Floor* floor_of(const std::string& rel) {
  const Floor* best = nullptr;
  for (const auto& f : kFloors) {
    const std::string p = f.prefix;
    const bool match = p.back() == '/' ? rel.rfind(p, 0) == 0 : rel == p;
    if (match && (!best || p.size() > std::string(best->prefix).size())) best = &f;
  }
  return best;
}

// Every include under `src` that breaks the floors, as "file:line: why".
std::vector<std::string> upward_includes(const fs::path& src) {
  std::vector<std::string> problems;
  static const std::regex kInclude(R"(^\s*#\s*include\s+"([^"]+)\")");
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), src).generic_string();
    const Floor* from = floor_of(rel);
    if (!from) {
      problems.push_back(rel + ": on no floor (add its folder to kFloors and to docs/design.md \"Layout\")");
      continue;
    }
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string target = m[1].str();
      const std::string where = rel + ":" + std::to_string(n) + ": includes \"" + target + "\"";
      const Floor* to = floor_of(target);
      if (!to || !fs::exists(src / target)) {
        problems.push_back(where + ", which is no file on a floor under src/");
      } else if (to->level > from->level) {
        problems.push_back(where + ", floor " + std::to_string(to->level) + " (" + to->prefix +
                           ") above its own floor " + std::to_string(from->level) + " (" + from->prefix + ")");
      } else if (to->level == from->level && std::string(to->prefix) != from->prefix &&
                 std::string(to->prefix).back() == '/' && std::string(from->prefix).back() == '/') {
        problems.push_back(where + ", a sibling on floor " + std::to_string(to->level) + " (" + to->prefix + ")");
      }
    }
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

}  // namespace

TEST_CASE("floors: every #include under src/ points down the layer order") {
  const auto problems = upward_includes(fs::path(LAZYAGENT_SOURCE_DIR) / "src");
  for (const auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
}

TEST_CASE("floors: the check finds an include that points up, and one on no floor") {
  const fs::path dir = fs::temp_directory_path() / ("lazyagent-floors-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "util");
  fs::create_directories(dir / "engine" / "podman");
  fs::create_directories(dir / "engine" / "k8s");
  fs::create_directories(dir / "pipeline");
  fs::create_directories(dir / "stray");
  std::ofstream(dir / "util" / "a.h") << "#pragma once\n";
  std::ofstream(dir / "pipeline" / "p.h") << "#pragma once\n";
  std::ofstream(dir / "engine" / "k8s" / "k.h") << "#pragma once\n";
  std::ofstream(dir / "engine" / "podman" / "e.h") << "#pragma once\n#include \"util/a.h\"\n#include \"pipeline/p.h\"\n"
                                                   << "#include \"engine/k8s/k.h\"\n";
  std::ofstream(dir / "stray" / "s.h") << "#pragma once\n";
  const auto problems = upward_includes(dir);
  fs::remove_all(dir);
  REQUIRE(problems.size() == 3);
  CHECK(problems[0] == "engine/podman/e.h:3: includes \"pipeline/p.h\", floor 8 (pipeline/) above its own floor 7 "
                       "(engine/podman/)");
  CHECK(problems[1] == "engine/podman/e.h:4: includes \"engine/k8s/k.h\", a sibling on floor 7 (engine/k8s/)");
  CHECK(problems[2] == "stray/s.h: on no floor (add its folder to kFloors and to docs/design.md \"Layout\")");
}

TEST_CASE("files: no source file under src/ is over 600 lines (split by concept, STYLE.md 3)") {
  std::vector<std::string> big;
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(LAZYAGENT_SOURCE_DIR) / "src")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path());
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    if (lines > 600) big.push_back(entry.path().string() + ": " + std::to_string(lines) + " lines");
  }
  for (const auto& b : big) UNSCOPED_INFO(b);
  CHECK(files > 100);  // the walk found the sources
  CHECK(big.empty());
}
