// A patch resolved against a seed: whole files and diffs give the same kind
// of change set (files, hashes, stats, one canonical diff); the diff-only
// refusals against the seed (missing_file, file_exists, a symlink in the
// seed, a hunk that does not apply); the format told from the content.
#include "contract/change_set.h"

#include "catch_compat.h"

#include <filesystem>
#include <fstream>

#include "util/digest.h"
#include "unit_tmp.h"

using namespace lazyagent;
namespace fs = std::filesystem;

namespace {

const std::string kBroken = "def add(a, b):\n    return a - b\n";
const std::string kFixed = "def add(a, b):\n    return a + b\n";

struct Seed {
  Tmp t;
  SeedSnapshot snap;
  Seed() {
    std::ofstream(t.path + "/calculator.py") << kBroken;
    fs::create_directories(t.path + "/pkg");
    std::ofstream(t.path + "/pkg/mod.py") << "x = 1\n";
    fs::create_symlink("calculator.py", t.path + "/alias.py");
    snap = snapshot_seed_source(t.path, SeedConfig{}).value();
  }
};

ContractLimits limits() {
  ContractLimits l;
  l.allow = {"calculator.py", "pkg/", "pkg", "alias.py", "new.py"};
  return l;
}

ChangeResult resolve(const Seed& s, const std::string& text) {
  const PatchCheck c = check_patch_text(text, limits());
  INFO((c.ok() ? std::string() : c.findings[0].code + ": " + c.findings[0].message));
  REQUIRE(c.ok());
  return resolve_changes(c, s.snap);
}

std::vector<std::string> codes(const ChangeResult& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) out.push_back(f.code + " [" + f.path + "]");
  return out;
}

const std::string kDiff =
    "diff --git a/calculator.py b/calculator.py\n--- a/calculator.py\n+++ b/calculator.py\n"
    "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";

}  // namespace

TEST_CASE("the format is told from the content", "[change_set]") {
  CHECK(detect_patch_format("{\"files\":[]}") == PatchFormat::kFiles);
  CHECK(detect_patch_format("  \n{") == PatchFormat::kFiles);
  CHECK(detect_patch_format(kDiff) == PatchFormat::kDiff);
  CHECK(detect_patch_format("--- a/x\n+++ b/x\n@@ -1 +1 @@\n") == PatchFormat::kDiff);
  CHECK(detect_patch_format("") == PatchFormat::kDiff);
  CHECK(detect_patch_format("not json") == PatchFormat::kFiles);
  CHECK(check_patch_text("not json", limits()).findings[0].code == "unknown_format");
  CHECK(check_patch_text("{\"files\": [", limits()).findings[0].code == "malformed_json");
  CHECK(check_patch_text("[1]", limits()).findings[0].code == "bad_shape");
  CHECK(check_patch_text("", limits()).findings[0].code == "empty_diff");
}

TEST_CASE("a whole-file fix and the same fix as a diff give the same change", "[change_set]") {
  Seed s;
  const ChangeResult files = resolve(s, "{\"files\":[{\"path\":\"calculator.py\",\"content\":\"def add(a, b):\\n    return a + b\\n\"}]}");
  const ChangeResult diff = resolve(s, kDiff);
  REQUIRE(files.ok());
  REQUIRE(diff.ok());
  CHECK(files.changes.format == PatchFormat::kFiles);
  CHECK(diff.changes.format == PatchFormat::kDiff);
  for (const ChangeResult* r : {&files, &diff}) {
    REQUIRE(r->changes.files.size() == 1);
    const FileChange& f = r->changes.files[0];
    CHECK(f.path == "calculator.py");
    CHECK(f.op == FileOp::kModify);
    CHECK(f.content == kFixed);
    CHECK(f.before_sha256 == sha256_hex(kBroken));
    CHECK(f.after_sha256 == sha256_hex(kFixed));
    CHECK(r->changes.diff == kDiff);
    CHECK(r->changes.stats.added == 1);
    CHECK(r->changes.stats.removed == 1);
  }
  CHECK(change_summary_json(diff.changes).dump() ==
        "{\"changed_files\":[{\"after_sha256\":\"" + sha256_hex(kFixed) + "\",\"before_sha256\":\"" + sha256_hex(kBroken) +
            "\",\"change\":\"modified\",\"mode\":420,\"path\":\"calculator.py\"}],\"diff_stats\":{\"added\":1,\"files\":1,"
            "\"hunks\":1,\"removed\":1},\"patch_format\":\"diff\"}");
  const auto writes = copy_writes(diff.changes);
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].content == kFixed);
}

TEST_CASE("diffs against the seed: create, delete, missing, existing, symlink, not applying", "[change_set]") {
  Seed s;
  auto r = resolve(s, "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+n = 1\n--- a/pkg/mod.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n");
  REQUIRE(r.ok());
  REQUIRE(r.changes.files.size() == 2);
  CHECK(r.changes.files[0].op == FileOp::kCreate);
  CHECK(r.changes.files[1].op == FileOp::kDelete);
  CHECK(r.changes.diff ==
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+n = 1\n"
        "diff --git a/pkg/mod.py b/pkg/mod.py\ndeleted file mode 100644\n--- a/pkg/mod.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n");
  CHECK(copy_writes(r.changes)[1].remove);

  CHECK(codes(resolve(s, "--- a/pkg/none.py\n+++ b/pkg/none.py\n@@ -1 +1 @@\n-a\n+b\n")) ==
        std::vector<std::string>{"missing_file [pkg/none.py]"});
  CHECK(codes(resolve(s, "--- /dev/null\n+++ b/calculator.py\n@@ -0,0 +1 @@\n+x\n")) ==
        std::vector<std::string>{"file_exists [calculator.py]"});
  CHECK(codes(resolve(s, "--- a/alias.py\n+++ b/alias.py\n@@ -1 +1 @@\n-a\n+b\n")) ==
        std::vector<std::string>{"through_symlink [alias.py]"});
  CHECK(codes(resolve(s, "--- a/pkg\n+++ b/pkg\n@@ -1 +1 @@\n-a\n+b\n")) == std::vector<std::string>{"replaces_directory [pkg]"});
  const auto bad = resolve(s, "--- a/calculator.py\n+++ b/calculator.py\n@@ -1,2 +1,2 @@\n def add(x, y):\n-    return x - y\n+    return x + y\n");
  CHECK(codes(bad) == std::vector<std::string>{"hunk_does_not_apply [calculator.py]"});
  CHECK(bad.changes.files.empty());
}

TEST_CASE("offsets and recounts are noted, modes follow the diff", "[change_set]") {
  Seed s;
  const auto r = resolve(s, "--- a/calculator.py\n+++ b/calculator.py\n@@ -5,2 +5,9 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n");
  REQUIRE(r.ok());
  CHECK(r.changes.notes.size() == 2);
  const auto m = resolve(s, "diff --git a/pkg/mod.py b/pkg/mod.py\nold mode 100644\nnew mode 100755\n");
  REQUIRE(m.ok());
  REQUIRE(m.changes.files.size() == 1);
  CHECK(m.changes.files[0].mode == 0755);
  CHECK(m.changes.diff == "diff --git a/pkg/mod.py b/pkg/mod.py\nold mode 100644\nnew mode 100755\n");
}

TEST_CASE("a diff's suspicious findings: the applied file, only the lines it adds", "[change_set][suspicious]") {
  Tmp t;
  std::ofstream(t.path + "/calculator.py") << "import os\n\n\ndef add(a, b):\n    return a - b\n\n\ndef _child():\n    os._exit(0)\n";
  const SeedSnapshot seed = snapshot_seed_source(t.path, SeedConfig{}).value();
  auto suspicious = [&](const std::string& diff) {
    const PatchCheck c = check_patch_text(diff, limits());
    REQUIRE(c.ok());
    CHECK(c.suspicious.empty());  // a diff's are found on resolving
    const ChangeResult r = resolve_changes(c, seed);
    INFO((r.ok() ? std::string() : r.findings[0].code + ": " + r.findings[0].message));
    REQUIRE(r.ok());
    std::vector<std::string> out;
    for (const auto& f : r.changes.suspicious) out.push_back(f.code + " @" + std::to_string(f.line));
    return out;
  };
  // The seed's own os._exit (line 9) is not the diff's.
  CHECK(suspicious("--- a/calculator.py\n+++ b/calculator.py\n@@ -4,3 +4,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n")
            .empty());
  // sys.exit added inside the existing def: not at import time in the file.
  CHECK(suspicious("--- a/calculator.py\n+++ b/calculator.py\n@@ -4,2 +4,4 @@\n def add(a, b):\n"
                   "+    if a is None:\n+        sys.exit(1)\n     return a - b\n")
            .empty());
  // The same lines at module level, and an atexit: flagged at their lines.
  CHECK(suspicious("--- a/calculator.py\n+++ b/calculator.py\n@@ -1,2 +1,5 @@\n import os\n+import atexit, sys\n"
                   "+if True:\n+    sys.exit(0)\n \n")
        == std::vector<std::string>{"suspicious_exit @4", "suspicious_atexit @2"});
}

TEST_CASE("a refused patch is kept as it came: its sha256 is recorded for verify (issue 43)", "[change_set]") {
  const PatchCheck c = check_patch_text("hello\n", limits());
  REQUIRE_FALSE(c.ok());
  CHECK(c.findings[0].code == "unknown_format");
  CHECK(c.findings[0].message ==
        "the patch is neither a unified diff (no `diff --git`, `---`/`+++` or `@@ -` header) nor JSON: make it with "
        "`git diff` or `diff -u OLD NEW`, or give whole files as {\"files\":[{\"path\":...,\"content\":...}]}");
  CHECK(c.stored == "hello\n");
  CHECK(c.sha256 == sha256_hex("hello\n"));
  const PatchCheck broken = check_patch_text("{\"files\": [", limits());
  CHECK(broken.sha256 == sha256_hex("{\"files\": ["));
}
