// The repository map (repo_map.h): top-level definitions per language, on
// small sources and on real files of this project, and the map's bounds.
#include "test_paths.h"
#include "catch_compat.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "contract/repo_map.h"

using namespace lazyagent;

namespace {

using Defs = std::vector<std::string>;

bool has(const Defs& d, const std::string& s) { return std::find(d.begin(), d.end(), s) != d.end(); }

std::string source_file(const std::string& rel) {
  std::ifstream in(std::string(LAZYAGENT_SOURCE_DIR) + "/" + rel);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SeedEntry file(const std::string& path, const std::string& content) {
  return {path, SeedEntry::Kind::kFile, 0644, content, "", content.size()};
}

}  // namespace

TEST_CASE("repo map: Python def, async def and class at column 0, not methods", "[planner][map]") {
  CHECK(top_level_definitions("pkg/a.py",
                              "import os\n\n\nclass Set(MutableSet):\n    def add(self, x):\n        pass\n\n\n"
                              "def total(prices: list) -> int:\n    return 0\n\nasync def fetch(url):\n    pass\n"
                              "x = 1  # def not_this():\n") ==
        Defs{"class Set(MutableSet)", "def total(prices: list) -> int", "async def fetch(url)"});
}

TEST_CASE("repo map: Go func (methods too) and type at column 0", "[planner][map]") {
  CHECK(top_level_definitions("uuid/uuid.go",
                              "package uuid\n\ntype UUID [16]byte\n\ntype (\n\tA int\n)\n\n"
                              "func (uuid UUID) Version() Version {\n\treturn Version(uuid[6] >> 4)\n}\n\n"
                              "func New() UUID {\n\treturn Must(NewRandom())\n}\n\tfunc inner() {}\n") ==
        Defs{"type UUID [16]byte", "func (uuid UUID) Version() Version", "func New() UUID"});
}

TEST_CASE("repo map: C and C++ function definitions at column 0, not declarations or calls", "[planner][map]") {
  CHECK(top_level_definitions("src/a.c",
                              "#include <stdio.h>\n\nint declared(int x);\n\nstatic int add(int a, int b)\n{\n"
                              "    return a + b;\n}\n\nstruct point {\n  int x;\n};\n\nstruct fwd;\n\n"
                              "int long_one(int a,\n             int b) {\n  if (a) {\n    return b;\n  }\n  return a;\n}\n"
                              "int table[3] = {1, 2, 3};\nif (x) {\n}\n") ==
        Defs{"static int add(int a, int b)", "struct point", "int long_one(int a,"});
  CHECK(top_level_definitions("x.hpp", "class Engine {\n public:\n  virtual void run() = 0;\n};\n") ==
        Defs{"class Engine"});
}

TEST_CASE("repo map: Rust items at column 0 after visibility and qualifiers", "[planner][map]") {
  CHECK(top_level_definitions("src/lib.rs",
                              "use std::fmt;\n\npub struct Roman(u32);\n\nimpl fmt::Display for Roman {\n"
                              "    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }\n}\n\n"
                              "pub(crate) async fn parse(s: &str) -> Option<Roman> {\n    None\n}\n"
                              "pub enum Error { Empty }\ntrait Numeral {}\nmod tests;\nconst MAX: u32 = 3999;\n") ==
        Defs{"pub struct Roman(u32)", "impl fmt::Display for Roman", "pub(crate) async fn parse(s: &str) -> Option<Roman>",
             "pub enum Error", "trait Numeral", "mod tests"});
}

TEST_CASE("repo map: JavaScript function, class and export at column 0", "[planner][map]") {
  CHECK(top_level_definitions("web/app.js",
                              "'use strict';\nconst fs = require('fs');\n\nfunction add(a, b) {\n  return a + b;\n}\n"
                              "async function load(path) {\n}\nclass Cart extends Base {\n  total() {}\n}\n"
                              "export default function main() {}\nexport const VERSION = '1';\n") ==
        Defs{"function add(a, b)", "async function load(path)", "class Cart extends Base", "export default function main()",
             "export const VERSION"});
  CHECK(top_level_definitions("README.md", "def not_code():\n").empty());
  CHECK(top_level_definitions("data.json", "{\"def x\": 1}\n").empty());
}

TEST_CASE("repo map: real files of this project (C++ and a Python fixture)", "[planner][map]") {
  const Defs cpp = top_level_definitions("src/util/terminal_text.cpp", source_file("src/util/terminal_text.cpp"));
  CHECK(has(cpp, "std::string escape_for_terminal(std::string_view text)"));
  CHECK(has(cpp, "std::string to_valid_utf8(std::string_view text)"));
  CHECK(has(cpp, "std::string truncate_utf8(std::string_view text, std::size_t max_bytes, bool& cut)"));
  CHECK(has(cpp, "std::string trim_space(std::string_view text)"));
  for (const auto& d : cpp) {
    INFO(d);
    CHECK(d.find("namespace") == std::string::npos);
    CHECK(d.find("return") == std::string::npos);
  }
  CHECK(top_level_definitions("pricing.py", source_file("tests/fixtures/seeds/triage/pricing.py")) ==
        Defs{"def total(prices)", "def rounded(x)", "def label(name)"});
  // A long signature is cut, marked, and control characters never pass.
  const Defs long_one = top_level_definitions("a.py", "def f(" + std::string(300, 'x') + "\x1b):\n");
  REQUIRE(long_one.size() == 1);
  CHECK(long_one[0].size() == kMaxDefinitionBytes + 3);
  CHECK(long_one[0].substr(kMaxDefinitionBytes) == "...");
}

TEST_CASE("repo map: paths and sizes in order, definitions under them, bounded per file and in total", "[planner][map]") {
  SeedSnapshot seed;
  seed.entries.push_back(file("a.py", "def one():\n    pass\n\n\ndef two():\n    pass\n"));
  seed.entries.push_back({"pkg", SeedEntry::Kind::kDir, 0755, "", "", 0});
  seed.entries.push_back(file("pkg/data.bin", std::string("\0\1", 2)));
  seed.entries.push_back(file("pkg/z.go", "package z\n\nfunc Z() {}\n"));
  CHECK(repo_map(seed, {}) == "a.py (42 B)\n  def one()\n  def two()\npkg/data.bin (2 B)\npkg/z.go (23 B)\n  func Z()\n");
  RepoMapLimits one;
  one.definitions_per_file = 1;
  CHECK(repo_map(seed, one) == "a.py (42 B)\n  def one()\npkg/data.bin (2 B)\npkg/z.go (23 B)\n  func Z()\n");
  RepoMapLimits off;
  off.total_bytes = 0;
  CHECK(repo_map(seed, off).empty());
  // Many files: the map stays within its bound and says how many it left out.
  SeedSnapshot big;
  for (int i = 0; i < 3000; ++i) {
    big.entries.push_back(file("pkg/module_" + std::to_string(1000 + i) + ".py", "def f_" + std::to_string(i) + "():\n"));
  }
  RepoMapLimits small;
  small.total_bytes = 4096;
  const std::string m = repo_map(big, small);
  CHECK(m.size() <= 4096 + 64);
  CHECK(m.rfind("pkg/module_1000.py (", 0) == 0);
  CHECK(m.find(" more files (list_files shows them)\n") != std::string::npos);
}
