// The diff contract: every refusal reason a diff can meet before it is
// applied, the caps with the key to raise, and the content rules on the
// lines a diff adds.
#include "contract/diff_contract.h"

#include "catch_compat.h"

using namespace lazyagent;

namespace {

ContractLimits limits(std::vector<std::string> allow = {"calculator.py", "pkg/"}) {
  ContractLimits l;
  l.allow = std::move(allow);
  return l;
}

std::vector<std::string> codes(const std::string& text, const ContractLimits& l = limits()) {
  std::vector<std::string> out;
  for (const auto& f : validate_diff_text(text, l).findings) out.push_back(f.code + " [" + f.path + "]");
  return out;
}

std::string message_of(const std::string& text, const std::string& code, const ContractLimits& l = limits()) {
  for (const auto& f : validate_diff_text(text, l).findings) {
    if (f.code == code) return f.message;
  }
  return "(no " + code + ")";
}

const std::string kFix =
    "--- a/calculator.py\n+++ b/calculator.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";

}  // namespace

TEST_CASE("a one-line fix on an allowed path is accepted", "[diff_contract]") {
  const auto r = validate_diff_text(kFix, limits());
  CHECK(r.ok());
  CHECK(r.stats.added == 1);
  CHECK(r.stats.removed == 1);
}

TEST_CASE("traversal and absolute paths in the --- and +++ headers are refused", "[diff_contract]") {
  CHECK(codes("--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n") ==
        std::vector<std::string>{"dot_component [../../etc/passwd]", "not_allowed [../../etc/passwd]"});
  // Only the old name is hostile: still refused (the old name is not used, but it is judged).
  CHECK(codes("--- ../../etc/passwd\n+++ calculator.py\n@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"dot_component [../../etc/passwd]", "rename [calculator.py]"});
  CHECK(codes("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"absolute_path [/etc/passwd]", "not_allowed [/etc/passwd]"});
  CHECK(codes("diff --git a/pkg/../x b/pkg/../x\n--- a/pkg/../x\n+++ b/pkg/../x\n@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"dot_component [pkg/../x]"});
  CHECK(codes("--- \"a/calc\\001.py\"\n+++ \"b/calc\\001.py\"\n@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"control_char_in_path [calc\\x01.py]", "not_allowed [calc\\x01.py]"});
}

TEST_CASE("/dev/null creates and deletes are allowed on allowed paths only", "[diff_contract]") {
  CHECK(codes("--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+x = 1\n").empty());
  CHECK(codes("--- a/pkg/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n").empty());
  CHECK(codes("--- /dev/null\n+++ b/setup.py\n@@ -0,0 +1 @@\n+x = 1\n") == std::vector<std::string>{"not_allowed [setup.py]"});
  CHECK(codes("--- a/test_calculator.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n") ==
        std::vector<std::string>{"not_allowed [test_calculator.py]"});
  CHECK(codes("diff --git a/pkg/run.sh b/pkg/run.sh\nold mode 100644\nnew mode 100755\n").empty());
  CHECK(codes("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n") == std::vector<std::string>{"not_allowed [run.sh]"});
}

TEST_CASE("renames, copies, binary patches, symlinks, submodules and odd modes have their own codes", "[diff_contract]") {
  CHECK(codes("diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 100%\nrename from pkg/a.py\nrename to pkg/b.py\n") ==
        std::vector<std::string>{"rename [pkg/b.py]"});
  CHECK(message_of("diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 100%\nrename from pkg/a.py\nrename to pkg/b.py\n", "rename") ==
        "the diff renames 'pkg/a.py' to 'pkg/b.py' (line 1); renames are refused: delete the old file and create the new one instead.");
  CHECK(codes("diff --git a/pkg/a.py b/pkg/c.py\ncopy from pkg/a.py\ncopy to pkg/c.py\n") == std::vector<std::string>{"copy [pkg/c.py]"});
  CHECK(codes("diff --git a/pkg/x.bin b/pkg/x.bin\nindex 1..2 100644\nBinary files a/pkg/x.bin and b/pkg/x.bin differ\n") ==
        std::vector<std::string>{"binary_patch [pkg/x.bin]"});
  CHECK(codes("Binary files seed.orig/x.bin and seed/x.bin differ\n") == std::vector<std::string>{"binary_patch []"});
  CHECK(codes("diff --git a/pkg/link b/pkg/link\nnew file mode 120000\n--- /dev/null\n+++ b/pkg/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n") ==
        std::vector<std::string>{"symlink [pkg/link]"});
  CHECK(codes("diff --git a/pkg/lib b/pkg/lib\nindex 1234567..89abcde 160000\n--- a/pkg/lib\n+++ b/pkg/lib\n@@ -1 +1 @@\n-Subproject commit 1234567\n+Subproject commit 89abcde\n") ==
        std::vector<std::string>{"submodule [pkg/lib]"});
  CHECK(codes("diff --git a/pkg/x b/pkg/x\nold mode 100644\nnew mode 100664\n") == std::vector<std::string>{"unsupported_mode [pkg/x]"});
}

TEST_CASE("two sections for one file are refused as duplicate_path", "[diff_contract]") {
  CHECK(codes(kFix + kFix) == std::vector<std::string>{"duplicate_path [calculator.py]"});
}

TEST_CASE("the contract's content rules run on the added lines", "[diff_contract]") {
  CHECK(codes("--- a/calculator.py\n+++ b/calculator.py\n@@ -1 +1 @@\n-a\n+b\x1b[2J\n") ==
        std::vector<std::string>{"control_char_in_content [calculator.py]"});
  CHECK(codes("--- a/calculator.py\n+++ b/calculator.py\n@@ -1 +1 @@\n-a\n+caf\xe9\n") ==
        std::vector<std::string>{"invalid_utf8 [calculator.py]"});
  // Context and removed lines are the seed's own: not judged.
  CHECK(codes("--- a/calculator.py\n+++ b/calculator.py\n@@ -1,2 +1,2 @@\n \x0c\n-a\x1b\n+a\n").empty());
  // CRLF lines are fine (CR is allowed content).
  CHECK(codes("--- a/calculator.py\n+++ b/calculator.py\n@@ -1 +1 @@\n-a\r\n+b\r\n").empty());
}

TEST_CASE("caps: each refusal names the cap, its key and how far it can be raised", "[diff_contract]") {
  // 10,000 changed lines against the default 1000.
  std::string big = "--- /dev/null\n+++ b/pkg/big.py\n@@ -0,0 +1,10000 @@\n";
  for (int i = 0; i < 10000; ++i) big += "+x = " + std::to_string(i) + "\n";
  ContractLimits wide = limits();
  wide.max_diff_bytes = kMaxDiffBytesCap;
  wide.max_bytes = kMaxPatchBytesCap;
  CHECK(codes(big, wide) == std::vector<std::string>{"too_many_changed_lines []"});
  CHECK(message_of(big, "too_many_changed_lines", wide) ==
        "the diff changes 10000 lines (10000 added, 0 removed); the limit is 1000 (patch.max_changed_lines in the "
        "config, which can be raised up to 200000).");
  wide.max_changed_lines = 10000;
  CHECK(codes(big, wide).empty());
  // With the defaults the same diff meets three caps.
  CHECK(codes(big) == std::vector<std::string>{"diff_too_large []", "too_many_changed_lines []", "too_large []"});
  CHECK(message_of(big, "diff_too_large") ==
        "the diff is " + std::to_string(big.size()) +
            " bytes; the limit is 12000 (patch.max_diff_bytes in the config, which can be raised up to 4194304).");
  CHECK(message_of(big, "too_large") ==
        "the diff adds 88890 bytes of content; the limit is 12000 (patch.max_bytes in the config, which can be "
        "raised up to 4194304).");
  // Files.
  std::string four;
  for (const char* n : {"pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/d.py"}) {
    four += std::string("--- a/") + n + "\n+++ b/" + n + "\n@@ -1 +1 @@\n-a\n+b\n";
  }
  CHECK(codes(four) == std::vector<std::string>{"too_many_files []"});
  CHECK(message_of(four, "too_many_files") ==
        "the diff changes 4 files; the limit is 3 (patch.max_files in the config, which can be raised up to 1000).");
  // Past the hard cap the text is not even read.
  const std::string huge(kMaxDiffBytesCap + 1, '+');
  const auto r = validate_diff_text(huge, limits());
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].message == "the diff is 4194305 bytes, over the hard cap of 4194304 bytes (patch.max_diff_bytes cannot be raised further).");
}

TEST_CASE("an empty diff and prose are refused", "[diff_contract]") {
  CHECK(codes("") == std::vector<std::string>{"empty_diff []"});
  CHECK(codes("I fixed it.\n") == std::vector<std::string>{"empty_diff []"});
}

TEST_CASE("bidi and invisible characters in added lines are refused at the new file's line", "[diff_contract][hidden_text]") {
  // Hunks at new lines 10 and 40: the second adds an RLO on its second line (41).
  const std::string text =
      "--- a/calculator.py\n+++ b/calculator.py\n@@ -10,2 +10,2 @@\n ctx\n-a\n+b\n"
      "@@ -40,2 +40,3 @@\n ctx\n+x = 'user\xe2\x80\xae'\n+y = 'a\xe2\x80\x8b'\n ctx\n";
  const auto r = validate_diff_text(text, limits());
  REQUIRE(r.findings.size() == 2);
  CHECK(r.findings[0].code == "bidi_control_in_content");
  CHECK(r.findings[0].line == 41);
  CHECK(r.findings[0].message.find("U+202E (RIGHT-TO-LEFT OVERRIDE) at line 41, column 10") != std::string::npos);
  CHECK(r.findings[1].code == "invisible_char_in_content");
  CHECK(r.findings[1].line == 42);
  // In a context or removed line the character is the seed's own: not judged here.
  CHECK(codes("--- a/calculator.py\n+++ b/calculator.py\n@@ -1,2 +1,2 @@\n x\xe2\x80\xae\n-a\xe2\x80\xae\n+b\n").empty());
  // In a header's path it is refused like any path.
  CHECK(codes("--- a/pkg/a\xe2\x80\xaepy.txt\n+++ b/pkg/a\xe2\x80\xaepy.txt\n@@ -1 +1 @@\n-a\n+b\n") ==
        std::vector<std::string>{"bidi_control_in_path [pkg/a\\u{202e}py.txt]"});
}

TEST_CASE("the suspicious scan is not run on a diff's added text alone, even with refuse_suspicious", "[diff_contract]") {
  // Alone, these lines look like an import-time exit; in the file they are
  // inside a def. resolve_changes judges them in the applied file.
  ContractLimits l = limits();
  l.refuse_suspicious = true;
  CHECK(codes("--- a/calculator.py\n+++ b/calculator.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n"
              "+    if a is None:\n+        sys.exit(1)\n     return a - b\n",
              l)
            .empty());
}

TEST_CASE("a section whose +++ header names no file is refused, not passed on with no path", "[diff_contract]") {
  // Found by the unified_diff fuzzer: an empty `+++ ` name after a quoted
  // `---` name gave a file with an empty path and no finding.
  const std::string text = "--- /\"a/dev/null\n+++ \n@@ -0,0 +1 @@\n+x\n";
  const auto r = validate_diff_text(text, limits());
  CHECK_FALSE(r.ok());
  bool named = false;
  for (const auto& f : r.findings) named = named || f.code == "empty_path" || f.code == "malformed_diff";
  CHECK(named);
}
