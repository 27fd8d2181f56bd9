// Writing the unified diff of a change: what `lazyagent-oci diff RUN_ID`
// prints and what `apply` re-applies, whatever form the patch arrived in.
// Pure.
//
// The form is `git diff`'s (so `git apply` and `patch -p1` take it): a
// `diff --git a/P b/P` section per file, `new file mode` / `deleted file mode`
// / `old mode`+`new mode` lines when they apply, `--- a/P` / `+++ b/P` (or
// /dev/null), hunks with 3 lines of context and "\ No newline at end of
// file" markers. Lines are compared byte for byte (a CRLF line differs from
// an LF one). The line diff is Myers' O(ND) algorithm on what is left after
// the common head and tail are cut off; past kMaxDiffEdits differences it
// gives up on minimality and replaces the middle as one block (still a
// correct diff, only a longer one).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "contract/unified_diff.h"

namespace lazyagent {

inline constexpr std::size_t kMaxDiffEdits = 2000;

struct TextChange {
  std::string path;
  FileOp op = FileOp::kModify;
  std::string old_content;  // "" for a created file
  std::string new_content;  // "" for a deleted file
  unsigned old_mode = 0100644;
  unsigned new_mode = 0100644;
};

// The sections of every change, in the given order. A change with the same
// content and mode on both sides writes nothing.
std::string write_unified_diff(const std::vector<TextChange>& changes, std::size_t context = 3);

// A path as git writes it in headers: as it is, or C-quoted ("a/x\"y") when
// it holds a quote, a backslash, a control byte or ends in a space.
std::string git_quoted(std::string_view prefix, std::string_view path);

}  // namespace lazyagent
