// The strict applier against `git apply` as an oracle: for each case both
// must agree on whether the diff applies and on the result (the one known
// difference, a hunk with no context at all, is tested as such). Plus the
// findings' codes and messages, which name the file and the hunk.
#include "contract/diff_apply.h"

#include "catch_compat.h"

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "unit_tmp.h"

using namespace lazyagent;

namespace {

FileDiff only_file(const std::string& diff) {
  const DiffReadResult r = read_unified_diff(diff);
  REQUIRE(r.ok());
  REQUIRE(r.diff.files.size() == 1);
  return r.diff.files[0];
}

FileApplyResult apply_text(const std::string& diff, const std::string& content) {
  return apply_file_diff(only_file(diff), content);
}

void write(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `git apply` of `diff` to a file `f` holding `content`, outside any
// repository: the result, or nullopt when git refuses.
std::optional<std::string> git_apply(const std::string& diff, const std::string& content, bool create = false) {
  Tmp t;
  if (!create) write(t.path + "/f", content);
  write(t.path + "/p.diff", diff);
  const std::string cmd = "cd " + t.path + " && git apply p.diff >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return std::nullopt;
  return slurp(t.path + "/f");
}

// Both appliers on the same case: the same outcome.
std::optional<std::string> both(const std::string& diff, const std::string& content) {
  const FileApplyResult ours = apply_text(diff, content);
  const std::optional<std::string> git = git_apply(diff, content);
  INFO("ours: " << (ours.ok() ? ours.content : ours.findings[0].message));
  INFO("git: " << (git ? *git : std::string("(refused)")));
  REQUIRE(ours.ok() == git.has_value());
  if (git) CHECK(ours.content == *git);
  return ours.ok() ? std::optional<std::string>(ours.content) : std::nullopt;
}

std::string numbered(int from, int to, const char* prefix = "line ") {
  std::string s;
  for (int i = from; i <= to; ++i) s += prefix + std::to_string(i) + "\n";
  return s;
}

const std::string kTenLines = numbered(1, 10);

const std::string kChange5 =
    "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+LINE FIVE\n line 6\n line 7\n line 8\n";

}  // namespace

TEST_CASE("applies exactly at the stated line, like git apply", "[diff_apply]") {
  const auto r = both(kChange5, kTenLines);
  REQUIRE(r);
  CHECK(*r == "line 1\nline 2\nline 3\nline 4\nLINE FIVE\nline 6\nline 7\nline 8\nline 9\nline 10\n");
  const FileApplyResult ours = apply_text(kChange5, kTenLines);
  REQUIRE(ours.placements.size() == 1);
  CHECK(ours.placements[0].offset == 0);
  CHECK(ours.placements[0].applied_line == 2);
}

TEST_CASE("applies at an offset, nearest first, like git apply", "[diff_apply]") {
  const std::string shifted = "new 1\nnew 2\nnew 3\n" + kTenLines;
  REQUIRE(both(kChange5, shifted));
  const FileApplyResult ours = apply_text(kChange5, shifted);
  CHECK(ours.placements[0].offset == 3);
  CHECK(ours.placements[0].applied_line == 5);
  // The context occurs twice: the nearer one to the stated line wins.
  const std::string twice = kTenLines + numbered(1, 10);
  const auto r = both("--- a/f\n+++ b/f\n@@ -14,3 +14,3 @@\n line 4\n-line 5\n+FIVE\n line 6\n", twice);
  REQUIRE(r);
  CHECK(r->find("FIVE") > twice.size() / 2);
}

TEST_CASE("a hunk that does not apply is refused, naming the file, the hunk and the first difference", "[diff_apply]") {
  const std::string other = "line 1\nline 2\nline 3\nline 4\nline 5 changed\nline 6\nline 7\nline 8\nline 9\nline 10\n";
  CHECK_FALSE(both(kChange5, other));
  const FileApplyResult ours = apply_text(kChange5, other);
  REQUIRE(ours.findings.size() == 1);
  CHECK(ours.findings[0].code == "hunk_does_not_apply");
  CHECK(ours.findings[0].path == "f");
  CHECK(ours.findings[0].message ==
        "hunk 1 (@@ -2,7 +2,7 @@ at line 3 of the diff) of 'f' does not apply: its 7 old line(s) are not in the "
        "file at line 2 or at any offset; at line 5 the file has 'line 5 changed', the hunk expects 'line 5'.");
}

TEST_CASE("a hunk that would apply only with fuzz is refused as hunk_needs_fuzz", "[diff_apply]") {
  // The outer context line differs; `patch` would apply it with fuzz 1.
  const std::string drifted = "line 1\nline 2 edited\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n";
  CHECK_FALSE(both(kChange5, drifted));
  const FileApplyResult ours = apply_text(kChange5, drifted);
  REQUIRE(ours.findings.size() == 1);
  CHECK(ours.findings[0].code == "hunk_needs_fuzz");
  CHECK(ours.findings[0].message ==
        "hunk 1 (@@ -2,7 +2,7 @@ at line 3 of the diff) of 'f' applies only with fuzz 1 (its outer 1 context "
        "line(s) ignored); strict mode refuses it; at line 2 the file has 'line 2 edited', the hunk expects 'line 2'.");
}

TEST_CASE("CRLF files: a CRLF diff applies, an LF diff is refused with the reason", "[diff_apply]") {
  const std::string crlf = "a\r\nb\r\nc\r\n";
  const auto r = both("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n", crlf);
  REQUIRE(r);
  CHECK(*r == "a\r\nB\r\nc\r\n");
  CHECK_FALSE(both("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", crlf));
  const FileApplyResult ours = apply_text("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", crlf);
  REQUIRE(ours.findings.size() == 1);
  CHECK(ours.findings[0].message.find("(the file's lines end in CRLF, the diff's do not)") != std::string::npos);
}

TEST_CASE("files without a final newline, on either side", "[diff_apply]") {
  auto r = both("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb");
  REQUIRE(r);
  CHECK(*r == "a\nb\n");
  r = both("--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n", "a\nb");
  REQUIRE(r);
  CHECK(*r == "a\nb\nc");
  // The diff says the file ends without a newline; it does not.
  CHECK_FALSE(both("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"));
  // A marker on a line that is not the last.
  const FileApplyResult bad = apply_text("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\\ No newline at end of file\n-b\n+B\n c\n", "a\nb\nc\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.findings[0].code == "hunk_does_not_apply");
}

TEST_CASE("anchors: a hunk at line 1 matches at the beginning, one without trailing context at the end", "[diff_apply]") {
  const std::string head = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-line 1\n+LINE 1\n line 2\n line 3\n";
  CHECK(both(head, kTenLines));
  CHECK_FALSE(both(head, "intro\n" + kTenLines));
  const FileApplyResult ours = apply_text(head, "intro\n" + kTenLines);
  REQUIRE_FALSE(ours.ok());
  CHECK(ours.findings[0].message.find("(it starts at line 1, so it must match at the beginning of the file)") != std::string::npos);
  const std::string tail = "--- a/f\n+++ b/f\n@@ -8,3 +8,3 @@\n line 8\n line 9\n-line 10\n+LINE 10\n";
  CHECK(both(tail, kTenLines));
  CHECK_FALSE(both(tail, kTenLines + "outro\n"));
  // Appending at the end of the file.
  const auto r = both("--- a/f\n+++ b/f\n@@ -9,2 +9,3 @@\n line 9\n line 10\n+line 11\n", kTenLines);
  REQUIRE(r);
  CHECK(*r == numbered(1, 11));
}

TEST_CASE("several hunks, and a hunk may not reuse lines an earlier hunk wrote", "[diff_apply]") {
  const std::string file = numbered(1, 30);
  const std::string two =
      "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+THREE\n line 4\n@@ -20,3 +20,4 @@\n line 20\n-line 21\n+TWENTY-ONE\n+extra\n line 22\n";
  const auto r = both(two, file);
  REQUIRE(r);
  CHECK(r->find("THREE\n") != std::string::npos);
  CHECK(r->find("TWENTY-ONE\nextra\nline 22\n") != std::string::npos);
  // The second hunk's context exists only as the first hunk's output.
  const std::string overlap =
      "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+X\n line 4\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+Y\n line 6\n";
  CHECK_FALSE(both(overlap, file));
}

TEST_CASE("create and delete: a new file from nothing, a deletion must empty the file", "[diff_apply]") {
  const FileApplyResult created = apply_text("--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n", "");
  REQUIRE(created.ok());
  CHECK(created.content == "a\nb\n");
  CHECK(git_apply("--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n", "", true) == std::optional<std::string>("a\nb\n"));
  CHECK(apply_text("--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n", "a\nb\n").ok());
  const FileApplyResult partial = apply_text("--- a/f\n+++ /dev/null\n@@ -1,2 +0,1 @@\n-a\n b\n", "a\nb\n");
  REQUIRE_FALSE(partial.ok());
  CHECK(partial.findings[0].message == "the diff deletes 'f' but its hunks leave 2 bytes of it.");
}

TEST_CASE("recounted hunks (a model's wrong counts) apply by their lines", "[diff_apply]") {
  const std::string wrong = "--- a/f\n+++ b/f\n@@ -4,9 +4,11 @@\n line 4\n-line 5\n+FIVE\n line 6\n";
  const FileApplyResult ours = apply_text(wrong, kTenLines);
  REQUIRE(ours.ok());
  CHECK(ours.content.find("FIVE") != std::string::npos);
}

TEST_CASE("known difference from git: lines added with no context at all are refused", "[diff_apply]") {
  // git apply puts them at the end of the file whatever line the hunk names
  // (its match_end rule); we refuse instead of guessing.
  const std::string no_context = "--- a/f\n+++ b/f\n@@ -3,0 +4 @@\n+INSERTED\n";
  CHECK(git_apply(no_context, kTenLines) == kTenLines + "INSERTED\n");
  const FileApplyResult ours = apply_text(no_context, kTenLines);
  REQUIRE_FALSE(ours.ok());
  CHECK(ours.findings[0].code == "hunk_does_not_apply");
  CHECK(ours.findings[0].message.find("without any context line") != std::string::npos);
}

TEST_CASE("a zero-context hunk that does not apply says to make the diff with context (diff -u)", "[diff_apply]") {
  // `diff -U0` of a change at line 5 of 10: no context, so it can only match
  // at the end of the file, and is refused with the way out.
  const std::string u0 = "--- a/f\n+++ b/f\n@@ -5 +5 @@\n-line 5\n+line five\n";
  const std::string file = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n";
  const FileApplyResult ours = apply_text(u0, file);
  REQUIRE(ours.findings.size() == 1);
  CHECK(ours.findings[0].message ==
        "hunk 1 (@@ -5,1 +5,1 @@ at line 3 of the diff) of 'f' does not apply: its lines are at line 5 (it has no "
        "trailing context, so it must match at the end of the file). The hunk has no context lines (as `diff -U0` "
        "writes): make the diff with context, with `diff -u` or `git diff`.");
  // With context (diff -u) the same change applies.
  const std::string u3 = "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n";
  CHECK(apply_text(u3, file).findings.empty());
}
