// Applying one file's hunks to its content, strictly. Pure: bytes in, bytes
// (or findings naming the file and the hunk) out.
//
// The rule is `git apply`'s without options: every line of a hunk's old side
// (its context and removed lines) must match the file byte for byte, newline
// included (no whitespace or CRLF leniency, no fuzz); the hunk may match at
// another line than the one it states (an offset), the nearest one first, in
// git's search order (stated line, +1, -1, +2, -2, ...); a hunk that starts
// at line 0 or 1 must match at the beginning and one without trailing context
// at the end; no hunk may match lines an earlier hunk wrote. A deleted file
// must be left empty by its hunks. A hunk that does not apply is refused as
// `hunk_does_not_apply`, or as `hunk_needs_fuzz` when it would apply with its
// outer one or two context lines ignored (what `patch` calls fuzz).
//
// Why our own applier, not libgit2 or `git apply` (ARCHITECTURE section 5):
//   - libgit2 1.5 (Debian 12) refuses plain `diff -u` output and applies a
//     hunk only at its stated line: a model's diff a few lines off, or made
//     with `diff -u`, could not be proven at all.
//   - `git apply` takes both, but it is a second reader of the diff: a path
//     it reads differently from the contract's reader is a path the contract
//     never judged (outside a repository it does not refuse `../`), its
//     refusals are English text to parse, and it would need a process and
//     the files on disk for every check. The contract must judge exactly what
//     is applied, so one reader (unified_diff.h) feeds both.
//   - The rules above are git's, small and exact; tests run `git apply` on
//     the same diffs and files as an oracle (tests/unit/diff_apply_test.cpp),
//     so the two must agree on what applies and on the result.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "contract/patch_contract.h"
#include "contract/unified_diff.h"

namespace lazyagent {

namespace diff_reason {
inline constexpr const char* kHunkDoesNotApply = "hunk_does_not_apply";
inline constexpr const char* kHunkNeedsFuzz = "hunk_needs_fuzz";
}  // namespace diff_reason

struct HunkPlacement {
  std::size_t hunk = 0;          // 0-based index in the file's hunks
  std::size_t stated_line = 0;   // 1-based line the hunk names (its new-side start)
  std::size_t applied_line = 0;  // 1-based line where it matched
  long offset = 0;               // applied - stated
};

struct FileApplyResult {
  std::string content;                   // the file after the hunks
  std::vector<HunkPlacement> placements; // one per hunk applied
  std::vector<Finding> findings;         // empty = applied
  bool ok() const { return findings.empty(); }
};

// `old_content` is the file's bytes ("" for a file the diff creates).
FileApplyResult apply_file_diff(const FileDiff& file, std::string_view old_content);

}  // namespace lazyagent
