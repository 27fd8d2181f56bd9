// The patch contract for unified diffs: what a diff may change, judged
// before anything is applied, with the same rules and reason codes as a
// whole-file patch where they mean the same thing. Pure.
//
// Every path a section names (its --- and +++ names, rename/copy names) meets
// the contract's path rules (absolute_path, dot_component, ...), so a `../`
// in either header is refused before any file is read. Then, per section:
//   rename          renames (and plain ---/+++ names that differ)  refused
//   copy            copies                                          refused
//   binary_patch    GIT binary patch / Binary files ... differ      refused
//   symlink         a side with mode 120000                         refused
//   submodule       a side with mode 160000                         refused
//   unsupported_mode any other mode than 100644 / 100755            refused
//   new files, deleted files and mode changes (100644 <-> 100755) are allowed
//   on allowed paths: the file's path must be on the allowlist (not_allowed)
//   duplicate_path  two sections for one file
// and the content rules of the contract (invalid_utf8,
// control_char_in_content, and whatever the contract adds) run on every
// line the diff adds: a new file's whole content, the added lines of a
// changed one. That is everything the model wrote; the lines already in the
// seed are the user's own. Caps (each refusal names its config key and how
// far it can be raised):
//   too_many_files          files changed            patch.max_files
//   diff_too_large          the diff's text bytes    patch.max_diff_bytes
//   too_many_changed_lines  added + removed lines    patch.max_changed_lines
//   too_large               bytes of added lines     patch.max_bytes
// After applying (diff_apply.h) the result's paths are exactly these, so the
// contract on the result is the contract here plus the applier's own
// findings (the hunk that does not apply, the file that is missing).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "contract/patch_contract.h"
#include "contract/unified_diff.h"

namespace lazyagent {

namespace diff_reason {
inline constexpr const char* kRename = "rename";
inline constexpr const char* kCopy = "copy";
inline constexpr const char* kBinary = "binary_patch";
inline constexpr const char* kSymlink = "symlink";
inline constexpr const char* kSubmodule = "submodule";
inline constexpr const char* kUnsupportedMode = "unsupported_mode";
inline constexpr const char* kDiffTooLarge = "diff_too_large";
inline constexpr const char* kTooManyChangedLines = "too_many_changed_lines";
}  // namespace diff_reason

inline constexpr unsigned kModeFile = 0100644;
inline constexpr unsigned kModeExecutable = 0100755;
inline constexpr unsigned kModeSymlink = 0120000;
inline constexpr unsigned kModeGitlink = 0160000;

// The findings for a diff that was read (its reader findings are separate).
// `text_bytes` is the size of the diff's text.
std::vector<Finding> validate_diff(const UnifiedDiff& diff, std::size_t text_bytes, const ContractLimits& limits);

struct DiffContractResult {
  UnifiedDiff diff;
  DiffStats stats;
  std::vector<Finding> findings;  // the reader's, then the contract's
  bool ok() const { return findings.empty(); }
};

// Read and judge a diff's text. A text over the diff cap is refused unread.
DiffContractResult validate_diff_text(std::string_view text, const ContractLimits& limits);

}  // namespace lazyagent
