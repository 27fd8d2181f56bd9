// Reading the user's seed project, and making the private copy a run uses.
//
// The seed is read once, without following symlinks (a symlink is recorded as
// a symlink, never read through), refusing special files (devices, fifos,
// sockets), within size limits. The sandbox never sees the user's directory:
// it gets a private copy, made by this tool under the run store, with the
// patch applied (ARCHITECTURE invariants 3 and 5). The snapshot's sha256 is
// the seed's identity in run records.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "patch_contract.h"
#include "result.h"

namespace lazyagent {

struct SeedEntry {
  enum class Kind { kDir, kFile, kSymlink };
  std::string path;     // relative, '/'-separated, no leading './'
  Kind kind = Kind::kFile;
  unsigned mode = 0644; // permission bits
  std::string data;     // file content, or symlink target
};

struct SeedLimits {
  std::size_t max_files = 10000;
  std::size_t max_bytes = 32 * 1024 * 1024;
};

struct SeedSnapshot {
  std::string root;                // absolute path it was read from
  std::vector<SeedEntry> entries;  // sorted by path
  std::size_t bytes = 0;
  std::string sha256;              // over paths, kinds, modes and contents
};

Result<SeedSnapshot> snapshot_seed(const std::string& dir, const SeedLimits& limits = {});

// The cheap check every command makes before anything runs (no record, no
// container): the seed is a directory this process can list. A missing or
// unreadable seed is the user's input, so the error is kUsage (exit 2):
// "seed DIR: no such directory", "seed DIR is not a directory", "seed DIR
// cannot be read: Permission denied".
Status check_seed_dir(const std::string& dir);

// Paths the patch changes (new files or different content), in patch order.
std::vector<std::string> changed_paths(const SeedSnapshot& seed, const Patch& patch);

// Refuses a patch path that would go through a symlink or replace a directory
// of the seed. Returns findings in the contract's format (code
// "through_symlink" / "replaces_directory").
std::vector<Finding> check_patch_against_seed(const SeedSnapshot& seed, const Patch& patch);

// Writes seed + patch under `dest` (created, must not exist). Files keep
// their permission bits; patched files are 0644 (0755 if they were executable).
Status materialize_copy(const SeedSnapshot& seed, const Patch& patch, const std::string& dest);

// Gives the tree (`path` itself and everything beneath, symlinks themselves,
// never their targets) to host uid/gid: the private copy to the sandbox's
// root, which is a high host id under its user namespace and could not read
// a 0600 file of host root's.
Status chown_tree(const std::string& path, long uid, long gid);

// Removes a directory tree without following symlinks. Missing is fine.
Status remove_tree(const std::string& path);

}  // namespace lazyagent
