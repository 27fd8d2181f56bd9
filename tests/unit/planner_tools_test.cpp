// The planner's read-only tools over a real directory (planner_tools.h):
// what they return, and hostile arguments each refused with a bounded error.
#include "catch_compat.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "provider/planner_tools.h"
#include "unit_tmp.h"

using namespace lazyagent;

namespace {

void write(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

struct Project {
  Tmp tmp;
  std::string root;
  Project() {
    root = tmp.path + "/seed";
    write(root + "/a.py", "def a():\n    return 1\n");
    write(root + "/pkg/b.py", "import a\n\ndef add(x, y):\n    return x - y\n");
    write(root + "/pkg/zz/c.txt", "hello\n");
    write(tmp.path + "/outside.txt", "SECRET-OUTSIDE\n");
    std::filesystem::create_symlink(tmp.path + "/outside.txt", root + "/leak.txt");
    std::filesystem::create_symlink("../..", root + "/pkg/up");
    std::filesystem::create_symlink("b.py", root + "/pkg/alias.py");
  }
};

}  // namespace

TEST_CASE("planner tools: list_files lists regular files with sizes, sorted, by glob") {
  Project p;
  const SnapshotTools t(p.root, {});
  const ToolResult all = t.call("list_files", "{}");
  CHECK(all.ok);
  CHECK(all.content == "3 file(s), path and size in bytes:\na.py 22\npkg/b.py 42\npkg/zz/c.txt 6\n");
  const ToolResult py = t.call("list_files", R"({"glob":"*.py"})");
  CHECK(py.content == "2 file(s), path and size in bytes:\na.py 22\npkg/b.py 42\n");
  CHECK(t.call("list_files", R"({"glob":"pkg/**"})").content.find("pkg/zz/c.txt 6") != std::string::npos);
  const ToolResult bad = t.call("list_files", R"({"glob":"[a-"})");
  CHECK_FALSE(bad.ok);
  CHECK(bad.code == "bad_glob");
}

TEST_CASE("planner tools: read_file returns numbered lines of a range") {
  Project p;
  const SnapshotTools t(p.root, {});
  const ToolResult r = t.call("read_file", R"({"path":"pkg/b.py","start_line":3,"end_line":4})");
  CHECK(r.ok);
  CHECK(r.content ==
        "pkg/b.py: lines 3-4 of 4 (each line prefixed with its number and ': ')\n3: def add(x, y):\n4:     return x - y\n");
  // A symlink that stays inside is followed.
  CHECK(t.call("read_file", R"({"path":"pkg/alias.py"})").content.find("4:     return x - y") != std::string::npos);
  CHECK(t.call("read_file", R"({"path":"pkg/b.py","start_line":9})").code == "bad_arguments");
  CHECK(t.call("read_file", R"({"path":"pkg"})").code == "not_a_file");
  CHECK(t.call("read_file", R"({"path":"nope.py"})").code == "no_such_file");
  CHECK(t.call("read_file", R"({"start_line":1})").code == "bad_arguments");
  CHECK(t.call("read_file", "not json").code == "bad_arguments");
  CHECK(t.call("rm_rf", "{}").code == "unknown_tool");
}

TEST_CASE("planner tools: no path escapes the snapshot") {
  Project p;
  const SnapshotTools t(p.root, {});
  const ToolResult traversal = t.call("read_file", R"({"path":"pkg/../../outside.txt"})");
  CHECK(traversal.code == "bad_path");
  CHECK(traversal.content == "error (bad_path): path 'pkg/../../outside.txt' has a '..' component");
  const ToolResult absolute = t.call("read_file", R"({"path":"/etc/passwd"})");
  CHECK(absolute.code == "bad_path");
  CHECK(absolute.content.find("root:") == std::string::npos);
  const ToolResult link = t.call("read_file", R"({"path":"leak.txt"})");
  CHECK(link.code == "path_escapes");
  CHECK(link.content.find("SECRET-OUTSIDE") == std::string::npos);
  CHECK(t.call("read_file", R"({"path":"pkg/up/outside.txt"})").code == "path_escapes");
  CHECK(t.call("read_file", "{\"path\":\"a.py\\u0000x\"}").code == "bad_path");
  // Nothing lists or searches through a symlink either.
  CHECK(t.call("list_files", "{}").content.find("leak.txt") == std::string::npos);
  CHECK(t.call("search", R"({"regex":"SECRET"})").content.rfind("0 matching line(s)", 0) == 0);
}

TEST_CASE("planner tools: a huge range and a huge result are bounded") {
  Project p;
  std::string big;
  for (int i = 0; i < 50000; ++i) big += "line " + std::to_string(i) + " of a big generated file\n";
  write(p.root + "/big.txt", big);
  ToolLimits limits;
  limits.result_bytes = 4096;
  const SnapshotTools t(p.root, limits);
  const ToolResult huge = t.call("read_file", R"({"path":"big.txt","start_line":1,"end_line":1000000000000})");
  CHECK(huge.code == "range_too_large");
  CHECK(huge.content == "error (range_too_large): at most 2000 lines a call; read the file in parts");
  const ToolResult part = t.call("read_file", R"({"path":"big.txt","start_line":100,"end_line":2099})");
  CHECK(part.ok);
  CHECK(part.content.size() <= 4096);
  CHECK(part.content.find("[result cut at 4096 bytes]") != std::string::npos);
  CHECK(part.content.find("of 50000") != std::string::npos);
  const ToolResult many = t.call("search", R"({"regex":"line"})");
  CHECK(many.content.size() <= 4096);
  CHECK(many.content.find("stopped early") != std::string::npos);
}

TEST_CASE("planner tools: a catastrophic regex is linear in RE2, an oversized one refused") {
  Project p;
  write(p.root + "/aaa.txt", std::string(100000, 'a') + "\n");
  const SnapshotTools t(p.root, {});
  const auto t0 = std::chrono::steady_clock::now();
  const ToolResult r = t.call("search", R"({"regex":"(a+)+$x","glob":"*.txt"})");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(r.ok);
  CHECK(r.content.rfind("0 matching line(s) in 2 file(s)", 0) == 0);
  const ToolResult huge = t.call("search", R"({"regex":"((a{100}){100}){100}"})");
  CHECK_FALSE(huge.ok);
  CHECK(huge.code == "bad_regex");
  CHECK(t.call("search", R"({"regex":"(unclosed"})").code == "bad_regex");
  CHECK(t.call("search", R"({"regex":"return x - y","glob":"*.py"})").content ==
        "1 matching line(s) in 2 file(s):\npkg/b.py:4:     return x - y\n");
}

TEST_CASE("planner tools: the definitions name the four tools") {
  const auto defs = tool_definitions();
  REQUIRE(defs.size() == 4);
  CHECK(defs[0]["function"]["name"] == "list_files");
  CHECK(defs[3]["function"]["name"] == "submit_patch");
  CHECK(defs[1]["function"]["parameters"]["required"] == nlohmann::json::array({"path"}));
}
