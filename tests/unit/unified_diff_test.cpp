// The unified diff reader: git and plain sections, names, hunks (counted and
// recounted), no-newline markers, binary/rename/copy/mode headers, and what
// is malformed, each with its line number.
#include "contract/unified_diff.h"

#include "catch_compat.h"

using namespace lazyagent;

namespace {

const char* kGitDiff =
    "diff --git a/calculator.py b/calculator.py\n"
    "index 1a2b3c4..5d6e7f8 100644\n"
    "--- a/calculator.py\n"
    "+++ b/calculator.py\n"
    "@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n";

DiffReadResult read(const std::string& text) { return read_unified_diff(text); }

}  // namespace

TEST_CASE("a git diff is read: names without a/ b/, modes from the index line, one hunk", "[unified_diff]") {
  const auto r = read(kGitDiff);
  REQUIRE(r.ok());
  REQUIRE(r.diff.files.size() == 1);
  const FileDiff& f = r.diff.files[0];
  CHECK(f.git);
  CHECK(f.path == "calculator.py");
  CHECK(f.old_path == "calculator.py");
  CHECK(f.new_path == "calculator.py");
  CHECK(f.op == FileOp::kModify);
  CHECK(f.old_mode == 0100644);
  CHECK(f.new_mode == 0100644);
  REQUIRE(f.hunks.size() == 1);
  const DiffHunk& h = f.hunks[0];
  CHECK(h.old_start == 1);
  CHECK(h.old_count == 2);
  CHECK(h.new_start == 1);
  CHECK(h.new_count == 2);
  CHECK(h.line == 5);
  CHECK_FALSE(h.recounted);
  REQUIRE(h.lines.size() == 3);
  CHECK(h.lines[1].op == '-');
  CHECK(h.lines[1].text == "    return a - b");
  const DiffStats s = diff_stats(r.diff);
  CHECK(s.files == 1);
  CHECK(s.added == 1);
  CHECK(s.removed == 1);
  CHECK(s.added_bytes == 17);
}

TEST_CASE("plain diff -u headers: tabs and dates, dir.orig/dir, x.orig/x, epoch means /dev/null", "[unified_diff]") {
  auto one = [](const std::string& text) {
    const auto r = read_unified_diff(text);
    REQUIRE(r.ok());
    REQUIRE(r.diff.files.size() == 1);
    return r.diff.files[0];
  };
  const std::string hunk = "@@ -1 +1 @@\n-a\n+b\n";
  auto f = one("--- calculator.py\t2024-01-01 10:00:00.000000000 +0000\n+++ calculator.py\t2024-01-02 10:00:00.000000000 +0000\n" + hunk);
  CHECK(f.path == "calculator.py");
  CHECK_FALSE(f.git);
  f = one("--- seed.orig/pkg/mod.py\t2024-01-01\n+++ seed/pkg/mod.py\t2024-01-01\n" + hunk);
  CHECK(f.path == "pkg/mod.py");
  CHECK(f.old_path == "pkg/mod.py");
  f = one("--- src/mod.py\n+++ src/mod.py\n" + hunk);
  CHECK(f.path == "src/mod.py");
  f = one("--- calculator.py.orig\n+++ calculator.py\n" + hunk);
  CHECK(f.path == "calculator.py");
  CHECK_FALSE(f.rename);
  f = one("--- a/x.py\n+++ b/y.py\n" + hunk);
  CHECK(f.rename);
  f = one("--- seed.orig/new.py\t1970-01-01 00:00:00.000000000 +0000\n+++ seed/new.py\t2024-01-01\n@@ -0,0 +1 @@\n+x\n");
  CHECK(f.op == FileOp::kCreate);
  CHECK(f.path == "new.py");  // `diff -ruN seed.orig seed`: the missing side is dated 1970
  f = one("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x\n");
  CHECK(f.op == FileOp::kCreate);
  CHECK(f.path == "new.py");
  f = one("--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n");
  CHECK(f.op == FileOp::kDelete);
  CHECK(f.path == "old.py");
  f = one("--- \"a/with \\\"quote\\\"\"\n+++ \"b/with \\\"quote\\\"\"\n" + hunk);
  CHECK(f.path == "with \"quote\"");
  f = one("--- \"a/tab\\there\"\n+++ \"b/tab\\there\"\n" + hunk);
  CHECK(f.path == "tab\there");
}

TEST_CASE("git extended headers: new, deleted, mode change, rename, copy, binary, submodule", "[unified_diff]") {
  auto r = read("diff --git a/new.py b/new.py\nnew file mode 100755\nindex 0000000..e69de29\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].op == FileOp::kCreate);
  CHECK(r.diff.files[0].new_mode == 0100755);
  CHECK(r.diff.files[0].path == "new.py");
  CHECK(r.diff.files[0].hunks.empty());

  r = read("diff --git a/old.py b/old.py\ndeleted file mode 100644\nindex 1..0\n--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].op == FileOp::kDelete);
  CHECK(r.diff.files[0].path == "old.py");

  r = read("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].old_mode == 0100644);
  CHECK(r.diff.files[0].new_mode == 0100755);

  r = read("diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].rename);
  CHECK(r.diff.files[0].old_path == "a.py");
  CHECK(r.diff.files[0].new_path == "b.py");
  CHECK(r.diff.files[0].path == "b.py");

  r = read("diff --git a/a.py b/c.py\nsimilarity index 90%\ncopy from a.py\ncopy to c.py\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].copy);

  r = read("diff --git a/logo.png b/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 5\nMcmZ?wbYNg+00\n\nliteral 0\nHcmV?d00001\n\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].binary);
  CHECK(r.diff.files[0].path == "logo.png");

  r = read("diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].binary);

  r = read("Binary files seed.orig/x.bin and seed/x.bin differ\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].binary);

  r = read("diff --git a/lib b/lib\nindex 1234567..89abcde 160000\n--- a/lib\n+++ b/lib\n@@ -1 +1 @@\n-Subproject commit 1234567\n+Subproject commit 89abcde\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].old_mode == 0160000);

  r = read("diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].new_mode == 0120000);
}

TEST_CASE("hunks: counts trusted when right, recounted when wrong, blank context lines, no-newline markers", "[unified_diff]") {
  // Counts too large (model style): the hunk ends at the next file.
  auto r = read("--- a/x.py\n+++ b/x.py\n@@ -1,9 +1,9 @@\n a\n-b\n+c\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-y\n+z\n");
  REQUIRE(r.ok());
  REQUIRE(r.diff.files.size() == 2);
  CHECK(r.diff.files[0].hunks[0].recounted);
  CHECK(r.diff.files[0].hunks[0].old_count == 2);
  CHECK(r.diff.files[0].hunks[0].new_count == 2);
  CHECK(r.diff.files[1].path == "y.py");
  // Counts too small: the following hunk lines are not dropped.
  r = read("--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n a\n-b\n+c\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].hunks[0].recounted);
  CHECK(r.diff.files[0].hunks[0].lines.size() == 3);
  // Right counts: a removed line that looks like a header stays a removed line.
  r = read("--- a/x\n+++ b/x\n@@ -1 +1 @@\n--- a\n+++ b\n");
  REQUIRE(r.ok());
  REQUIRE(r.diff.files.size() == 1);
  CHECK(r.diff.files[0].hunks[0].lines[0].text == "-- a");
  CHECK_FALSE(r.diff.files[0].hunks[0].recounted);
  // An empty line is an empty context line (editors strip the space).
  r = read("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].hunks[0].lines[1].op == ' ');
  CHECK(r.diff.files[0].hunks[0].lines[1].text.empty());
  // Trailing blank lines after a recounted hunk are not context.
  r = read("--- a/x\n+++ b/x\n@@ -1,7 +1,7 @@\n a\n-b\n+c\n\n\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].hunks[0].lines.size() == 3);
  // No newline at the end, on either side.
  r = read("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
  REQUIRE(r.ok());
  CHECK_FALSE(r.diff.files[0].hunks[0].lines[0].newline);
  CHECK(r.diff.files[0].hunks[0].lines[1].newline);
  // A mail signature after the last hunk is not part of it.
  r = read(std::string(kGitDiff) + "-- \n2.39.5\n\n");
  REQUIRE(r.ok());
  CHECK_FALSE(r.diff.files[0].hunks[0].recounted);
  CHECK(r.diff.files[0].hunks[0].lines.size() == 3);
  // CRLF lines keep their '\r' (the file's lines end in it); headers do not.
  r = read("--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n");
  REQUIRE(r.ok());
  CHECK(r.diff.files[0].path == "x");
  CHECK(r.diff.files[0].hunks[0].lines[0].text == "a\r");
}

TEST_CASE("text around the diff is skipped: mail headers, a commit message, Only in lines", "[unified_diff]") {
  const auto r = read(std::string("From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix add\n\nFix it.\n---\n calculator.py | 2 +-\n\n") +
                      kGitDiff + "Only in seed: notes.txt\n");
  REQUIRE(r.ok());
  REQUIRE(r.diff.files.size() == 1);
  CHECK(r.diff.files[0].hunks[0].lines.size() == 3);
}

TEST_CASE("empty_diff and malformed_diff, with line numbers", "[unified_diff]") {
  auto codes = [](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& f : read_unified_diff(text).findings) out.push_back(f.code + ": " + f.message);
    return out;
  };
  CHECK(codes("") == std::vector<std::string>{"empty_diff: the diff is empty: there is nothing to apply."});
  CHECK(codes(" \n\n") == std::vector<std::string>{"empty_diff: the diff is empty: there is nothing to apply."});
  CHECK(codes("Here is the fix: change - to +.\n") ==
        std::vector<std::string>{"empty_diff: no file changes found: the text has no `diff --git` line and no "
                                 "`---`/`+++` header pair."});
  CHECK(codes("@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"malformed_diff: line 1: a hunk header outside a file section (no ---/+++ lines before it)."});
  CHECK(codes("--- a/x\n+++ b/x\n@@ -1 +1 @@ \n-a\n") .empty());
  CHECK(codes("--- a/x\n+++ b/x\n@@ ... @@\n-a\n+b\n") ==
        std::vector<std::string>{"malformed_diff: line 3: '@@ ... @@' is not a hunk header of the form @@ -START,COUNT +START,COUNT @@."});
  CHECK(codes("--- a/x\n+++ b/x\nnot a hunk\n") ==
        std::vector<std::string>{"malformed_diff: line 1: the --- and +++ lines are not followed by a hunk."});
  CHECK(codes("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n") ==
        std::vector<std::string>{"malformed_diff: line 1: both --- and +++ name /dev/null."});
  CHECK(codes("diff --git a/x b/x\n--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"malformed_diff: line 2: a git diff's --- and +++ names need a prefix directory (a/, b/): 'x', 'x'."});
  CHECK(codes("--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n") ==
        std::vector<std::string>{"malformed_diff: line 4: a \"\\ No newline\" marker that follows no line."});
  CHECK(codes("diff --git a/x b/x\nold mode 10644\n")[0] == "malformed_diff: line 2: a file mode must be six octal digits.");
  CHECK(codes("--- a/x\n+++ b/x\n@@ -99999999999 +1 @@\n-a\n+b\n").size() == 1);
}

TEST_CASE("looks_like_unified_diff and describe_hunk", "[unified_diff]") {
  CHECK(looks_like_unified_diff(kGitDiff));
  CHECK(looks_like_unified_diff("--- a\n+++ b\n"));
  CHECK(looks_like_unified_diff("@@ -1 +1 @@\n"));
  CHECK_FALSE(looks_like_unified_diff("{\"files\":[]}"));
  CHECK_FALSE(looks_like_unified_diff("--- just a rule\ntext\n"));
  DiffHunk h;
  h.old_start = 40, h.old_count = 7, h.new_start = 40, h.new_count = 8, h.line = 14;
  CHECK(describe_hunk(h, 1) == "hunk 2 (@@ -40,7 +40,8 @@ at line 14 of the diff)");
}
