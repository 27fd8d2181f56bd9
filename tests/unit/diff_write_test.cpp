// The diff writer: exact output for the common cases, and round trips (write
// the diff of old -> new, read it, apply it to old: get new) over generated
// edits, every one also accepted by `git apply`.
#include "contract/diff_write.h"

#include "catch_compat.h"

#include <fstream>
#include <random>
#include <sstream>

#include "contract/diff_apply.h"
#include "unit_tmp.h"

using namespace lazyagent;

namespace {

std::string apply_written(const TextChange& c) {
  const std::string diff = write_unified_diff({c});
  const DiffReadResult r = read_unified_diff(diff);
  INFO(diff);
  REQUIRE(r.ok());
  REQUIRE(r.diff.files.size() == 1);
  const FileApplyResult a = apply_file_diff(r.diff.files[0], c.op == FileOp::kCreate ? "" : c.old_content);
  INFO((a.ok() ? std::string() : a.findings[0].message));
  REQUIRE(a.ok());
  return a.content;
}

}  // namespace

TEST_CASE("the diff of a one-line change is git's", "[diff_write]") {
  TextChange c{"calculator.py", FileOp::kModify, "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"};
  CHECK(write_unified_diff({c}) ==
        "diff --git a/calculator.py b/calculator.py\n--- a/calculator.py\n+++ b/calculator.py\n"
        "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n");
}

TEST_CASE("created, deleted, mode-changed, empty and no-newline files", "[diff_write]") {
  CHECK(write_unified_diff({{"n.py", FileOp::kCreate, "", "x = 1\n", 0, 0100644}}) ==
        "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x = 1\n");
  CHECK(write_unified_diff({{"o.py", FileOp::kDelete, "a\nb\n", "", 0100755, 0}}) ==
        "diff --git a/o.py b/o.py\ndeleted file mode 100755\n--- a/o.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n");
  CHECK(write_unified_diff({{"run.sh", FileOp::kModify, "x\n", "x\n", 0100644, 0100755}}) ==
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n");
  CHECK(write_unified_diff({{"empty", FileOp::kCreate, "", "", 0, 0100644}}) ==
        "diff --git a/empty b/empty\nnew file mode 100644\n");
  CHECK(write_unified_diff({{"same", FileOp::kModify, "x\n", "x\n"}}).empty());
  CHECK(write_unified_diff({{"f", FileOp::kModify, "a\nb", "a\nc"}}) ==
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n");
  CHECK(write_unified_diff({{"sp ace", FileOp::kModify, "a\n", "b\n"}}).rfind("diff --git a/sp ace b/sp ace\n", 0) == 0);
  CHECK(git_quoted("a/", "q\"x") == "\"a/q\\\"x\"");
}

TEST_CASE("hunks: 3 lines of context, near changes merged, far ones apart", "[diff_write]") {
  std::string a, b;
  for (int i = 1; i <= 40; ++i) {
    a += "l" + std::to_string(i) + "\n";
    b += (i == 5 || i == 11 || i == 30 ? "X" : "l") + std::to_string(i) + "\n";
  }
  const std::string d = write_unified_diff({{"f", FileOp::kModify, a, b}});
  CHECK(d.find("@@ -2,13 +2,13 @@") != std::string::npos);  // 5 and 11: 5 equal lines apart, one hunk
  CHECK(d.find("@@ -27,7 +27,7 @@") != std::string::npos);
  CHECK(read_unified_diff(d).diff.files[0].hunks.size() == 2);
  CHECK(apply_written({"f", FileOp::kModify, a, b}) == b);
}

TEST_CASE("round trips over generated edits, git apply takes every diff", "[diff_write]") {
  std::mt19937 rng(20261203);
  const char* words[] = {"a\n", "b\n", "c\n", "def f():\n", "    return 1\n", "\n", "x\r\n", "#\n"};
  for (int round = 0; round < 300; ++round) {
    std::string a, b;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) a += words[rng() % 8];
    // b: a with random deletions, insertions and replacements.
    std::istringstream in(a);
    std::string line;
    while (std::getline(in, line)) {
      const unsigned r = rng() % 10;
      if (r == 0) continue;
      if (r == 1) b += words[rng() % 8];
      b += line + "\n";
      if (r == 2) b += words[rng() % 8];
    }
    if (rng() % 4 == 0 && !b.empty()) b.pop_back();  // no final newline
    if (rng() % 5 == 0 && !a.empty()) a.pop_back();
    INFO("round " << round);
    if (a == b) {
      CHECK(write_unified_diff({{"f", FileOp::kModify, a, b}}).empty());
      continue;
    }
    CHECK(apply_written({"f", FileOp::kModify, a, b}) == b);
    if (round % 30 == 0) {
      Tmp t;
      std::ofstream(t.path + "/f", std::ios::binary) << a;
      std::ofstream(t.path + "/p.diff", std::ios::binary) << write_unified_diff({{"f", FileOp::kModify, a, b}});
      REQUIRE(std::system(("cd " + t.path + " && git apply p.diff 2>/dev/null").c_str()) == 0);
      std::ifstream f(t.path + "/f", std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      CHECK(ss.str() == b);
    }
  }
}

TEST_CASE("past kMaxDiffEdits differences the middle is one replaced block, still correct", "[diff_write]") {
  std::string a, b;
  for (int i = 0; i < 3000; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += "b" + std::to_string(i) + "\n";
  }
  a = "same\n" + a + "end\n";
  b = "same\n" + b + "end\n";
  CHECK(apply_written({"f", FileOp::kModify, a, b}) == b);
}
