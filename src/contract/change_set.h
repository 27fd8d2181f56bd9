// The change a patch makes to a seed snapshot, whatever form it came in:
// the files it creates, changes and deletes with their content after, their
// hashes before and after, the diff's stats, and the change as one unified
// diff against the snapshot (what `lazyagent-oci diff` prints and `apply`
// re-applies). This is what the private copy is written from.
//
// Whole files: a path the seed lacks is created, one it has is changed (a
// file with the same content is no change); through_symlink /
// replaces_directory refuse a path through a symlink or onto a directory.
// Patched files are 0644, 0755 when they were executable.
// Diffs: each section is applied to the seed's file (diff_apply.h); a file
// the diff creates must not exist (file_exists), one it changes or deletes
// must be a regular file of the seed (missing_file, through_symlink,
// replaces_directory); a file keeps its mode unless the diff gives a new one.
// Files are read from disk checked against the snapshot's hashes, at most
// kMaxPatchedFileBytes each. Findings name the file and the hunk.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/diff_apply.h"
#include "contract/patch_format.h"
#include "contract/seed_snapshot.h"
#include "contract/unified_diff.h"

namespace lazyagent {

inline constexpr std::size_t kMaxPatchedFileBytes = std::size_t{64} << 20;

namespace diff_reason {
inline constexpr const char* kMissingFile = "missing_file";
inline constexpr const char* kFileExists = "file_exists";
inline constexpr const char* kFileTooLarge = "file_too_large";
}  // namespace diff_reason

struct FileChange {
  std::string path;
  FileOp op = FileOp::kModify;
  std::string content;        // after ("" when deleted)
  unsigned mode = 0644;       // permission bits after
  unsigned old_mode = 0644;   // before (0 when created)
  std::string before_sha256;  // "" when created
  std::string after_sha256;   // "" when deleted
};

struct ChangeSet {
  PatchFormat format = PatchFormat::kFiles;
  std::vector<FileChange> files;        // in the patch's order
  DiffStats stats;                      // of `diff`
  std::string diff;                     // the change as a unified diff against the snapshot
  std::vector<std::string> notes;       // hunks applied at an offset, recounted hunks
  // A diff's suspicious_* findings (suspicious_code.h) on the lines it adds,
  // judged in the applied file. (A whole-file patch's come with its check.)
  std::vector<Finding> suspicious;
};

struct ChangeResult {
  ChangeSet changes;
  std::vector<Finding> findings;  // empty = the patch applies to this seed
  bool ok() const { return findings.empty(); }
};

// `check` must have no findings (check_patch_text).
ChangeResult resolve_changes(const PatchCheck& check, const SeedSnapshot& seed);

// The private copy's differences from the seed (write_seed_copy).
std::vector<FileWrite> copy_writes(const ChangeSet& changes);

// Paths the change touches, in order.
std::vector<std::string> changed_paths(const ChangeSet& changes);

// {"patch_format", "diff_stats": {files, added, removed, hunks}, "changed_files": [...]}
nlohmann::json change_summary_json(const ChangeSet& changes);

const char* file_op_name(FileOp op);  // "modified", "created", "deleted"

}  // namespace lazyagent
