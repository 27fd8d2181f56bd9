// Reading a unified diff: the text `git diff` and `diff -u` write, and what
// models write in their style. Pure: text in, structure and findings out.
//
// The reader only reads; diff_contract.h judges what it read (paths, renames,
// binary patches, modes, caps, content) and diff_apply.h applies it. The
// reader is our own, not libgit2's or git's (the reasons are at the top of
// diff_apply.h): the contract must see every path exactly as the applier will
// use it, so one reader serves both.
//
// What is read:
//   - git sections: `diff --git a/P b/P`, its extended headers (old/new mode,
//     new/deleted file mode, index, similarity, rename/copy from/to), then
//     `--- a/P` / `+++ b/P` and hunks, or `GIT binary patch` / `Binary files
//     ... differ`. Names lose their first component (a/, b/), as `git apply`'s
//     -p1 does.
//   - plain sections: `--- OLD[\tdate]` + `+++ NEW[\tdate]`, then hunks. A
//     name is the text before a tab (or the whole rest of the line); "quoted"
//     names are C-unquoted. When both names have a directory and differ only
//     in their first component (`a/x` `b/x`, `proj.orig/x` `proj/x`), that
//     component is dropped; `/dev/null` or an epoch timestamp (what `diff -N`
//     writes) means the file does not exist on that side. A lone name starting
//     with `a/` (old side) or `b/` (new side) loses that prefix.
//   - hunks: `@@ -A[,B] +C[,D] @@[ text]`, lines starting with ' ', '-', '+'
//     (an empty line is an empty context line), and `\ No newline at end of
//     file`. The counts B and D are trusted when the lines agree with them;
//     when they do not (models miscount), the hunk is the run of hunk lines up
//     to the next header and is marked `recounted`. Every line of a hunk must
//     still match the file exactly when it is applied.
//   - Text outside sections (a mail's headers, a commit message, `Only in`
//     lines) is skipped, as `git apply` and `patch` do; a hunk header outside
//     a section is malformed.
// Findings: empty_diff, malformed_diff (each with the diff's line number).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "contract/patch_contract.h"

namespace lazyagent {

namespace diff_reason {
inline constexpr const char* kEmptyDiff = "empty_diff";
inline constexpr const char* kMalformedDiff = "malformed_diff";
}  // namespace diff_reason

struct DiffLine {
  char op = ' ';         // ' ' context, '-' removed, '+' added
  std::string text;      // without the line's '\n' (a '\r' of a CRLF file stays)
  bool newline = true;   // false: "\ No newline at end of file" followed it
};

struct DiffHunk {
  std::size_t old_start = 0, old_count = 0, new_start = 0, new_count = 0;
  std::size_t line = 0;     // 1-based line of the @@ header in the diff text
  bool recounted = false;   // the header's counts were wrong; these are the lines'
  std::vector<DiffLine> lines;
};

enum class FileOp { kModify, kCreate, kDelete };

struct FileDiff {
  std::string old_path;     // "" = /dev/null (created)
  std::string new_path;     // "" = /dev/null (deleted)
  std::string path;         // the file it changes: new_path, else old_path
  FileOp op = FileOp::kModify;
  unsigned old_mode = 0;    // git modes (0100644, 0100755, 0120000, 0160000); 0 = not stated
  unsigned new_mode = 0;
  bool git = false;         // a `diff --git` section
  bool rename = false;      // rename from/to, or plain names that differ
  bool copy = false;        // copy from/to
  bool binary = false;      // GIT binary patch / Binary files ... differ
  std::size_t line = 0;     // 1-based line where the section starts
  std::vector<DiffHunk> hunks;
};

struct UnifiedDiff {
  std::vector<FileDiff> files;
};

struct DiffStats {
  std::size_t files = 0;
  std::size_t added = 0;    // '+' lines
  std::size_t removed = 0;  // '-' lines
  std::size_t hunks = 0;
  std::size_t added_bytes = 0;  // bytes of the '+' lines, newlines included
};

struct DiffReadResult {
  UnifiedDiff diff;
  std::vector<Finding> findings;  // empty_diff / malformed_diff
  bool ok() const { return findings.empty(); }
};

// Never throws. Findings name the diff's line numbers.
DiffReadResult read_unified_diff(std::string_view text);

DiffStats diff_stats(const UnifiedDiff& diff);

// A hunk described for a message: "hunk 2 (@@ -40,7 +40,8 @@ at line 14 of the diff)".
std::string describe_hunk(const DiffHunk& h, std::size_t index);

// Whether `text` looks like a unified diff: it has a `diff --git ` line, a
// `--- ` line followed by `+++ `, or a `@@ -` hunk header line.
bool looks_like_unified_diff(std::string_view text);

}  // namespace lazyagent
