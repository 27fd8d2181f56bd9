// Reading and writing a session's working copy, which is hostile: every
// command of the session ran in it, and may have planted symlinks (to the
// host's files, to another session), FIFOs, device nodes, huge or sparse
// files and names with control characters (STYLE.md principle 21).
//
//   read   one regular file, reached by openat one component at a time with
//          O_NOFOLLOW (no symlink on the way or at the end is followed, even
//          one that points inside the copy), opened O_NONBLOCK (a FIFO never
//          blocks: it is refused by fstat before any read), at most
//          max_bytes (a larger file is refused before it is read)
//   write  the same walk; missing directories are made, an existing file is
//          unlinked and a new one created O_EXCL|O_NOFOLLOW (never written
//          through a link), then given to the sandbox's mapped root
//   diff   the copy and the seed as it was at open (base/) read by the seed
//          snapshot's reader (seed_snapshot.h: no link followed, special files
//          refused, O_NONBLOCK, every byte hashed and bounded), compared, and
//          written as a unified diff (diff_write.h); the diff is then judged by
//          the patch contract (allowed paths, size caps, control and bidi
//          characters, binary content) exactly as a submitted patch is
// Nothing runs in the copy while these read it: each command's container
// is gone before its command returns (session.h), and the session lock keeps
// commands and reads apart.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config.h"
#include "contract/diff_write.h"
#include "contract/patch_contract.h"
#include "util/result.h"

namespace lazyagent {

// The copy's scratch directory ($TMPDIR, sandbox_policy.h kScratchDir):
// never part of a diff.
inline constexpr const char* kSessionScratchName = ".lazyagent-tmp";

// The content of `path` (a patch path: check_patch_path's rules) under `root`.
Result<std::string> read_copy_file(const std::string& root, const std::string& path, std::size_t max_bytes);

// Writes `content` at `path` (a patch path) under `root`; the file (0644) and
// any directory made (0755) are owned by uid/gid (-1: left as created).
Status write_copy_file(const std::string& root, const std::string& path, const std::string& content, long uid,
                       long gid);

struct CopyDiff {
  std::string diff;                    // `git diff` form; "" = no change
  std::vector<std::string> changed_paths;
  std::vector<Finding> findings;       // the patch contract's, plus what a patch cannot carry (links)
  std::vector<std::string> ignored;    // new files the seed's repository ignores: left out
};

// What the working copy changed, as read (diff_copy's first half, which
// reads the copy; the second, judge_copy_changes, reads only the user's
// repository): the changed files and what a patch cannot carry (links).
struct CopyChanges {
  std::vector<TextChange> changes;
  std::vector<Finding> findings;
};

// The working copy `work` against `base`, each read with at most
// `max_bytes` of file content (a 1 GiB sparse file is refused, not read).
// The config's seed.exclude leaves paths out, as it does of the seed; when the
// seed is a git repository, so do its ignore rules for new files (build
// output such as __pycache__/ or a generated parser table), asked of the
// user's repository, never of the copy's .gitignore (the sandbox wrote it).
Result<CopyDiff> diff_copy(const std::string& base, const std::string& work, const Config& config,
                           std::size_t max_bytes);

// diff_copy in two halves: the copy read (in the user's namespace when the
// session is rootless: session_copy.h), then judged by the seed's ignore
// rules and the patch contract.
Result<CopyChanges> read_copy_changes(const std::string& base, const std::string& work, const Config& config,
                                      std::size_t max_bytes);
Result<CopyDiff> judge_copy_changes(CopyChanges changes, const Config& config);

// CopyChanges as bytes and back (byte_frames.h): how a child process hands
// them over. Pure; a malformed input is an error, never a partial value.
std::string encode_copy_changes(const CopyChanges& c);
Result<CopyChanges> decode_copy_changes(const std::string& bytes);

}  // namespace lazyagent
