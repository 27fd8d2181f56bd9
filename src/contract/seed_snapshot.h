// Reading the user's seed project, and making the private copy a run uses.
//
// The seed is read without following symlinks (a symlink is recorded as a
// symlink, never read through), refusing special files (devices, fifos,
// sockets), within size limits. The sandbox never sees the user's directory:
// it gets a private copy, made by this tool under the run store, with the
// patch applied (ARCHITECTURE invariants 3 and 5). The snapshot's sha256 is
// the seed's identity in run records.
//
// One way to read it (the same for `test`, `run`, `eval`, `export`, `seed`):
// snapshot_seed_source() lists the paths seed_source.h gives (a directory, or
// a git work tree read as git reads it), each file hashed as it streams from
// disk: the snapshot holds hashes, sizes and symlink targets, never file
// content, so a 2 GiB repository costs its listing in memory. Content is read
// again when needed (read_seed_file, write_seed_copy), each time checked
// against the snapshot's hash: a seed that changes during a run is refused,
// not silently tested in another state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "contract/patch_contract.h"
#include "util/result.h"
#include "contract/seed_source.h"

namespace lazyagent {

struct SeedEntry {
  enum class Kind { kDir, kFile, kSymlink };
  std::string path;     // relative, '/'-separated, no leading './'
  Kind kind = Kind::kFile;
  unsigned mode = 0644; // permission bits
  std::string data;     // symlink target
  std::string sha256;   // of the content (file), target (symlink) or "" (directory)
  std::uint64_t size = 0;  // file bytes
};

struct SeedSnapshot {
  std::string root;                // absolute path it was read from
  std::vector<SeedEntry> entries;  // seed_path_less order (seed_source.h)
  std::size_t bytes = 0;
  std::string sha256;              // over paths, kinds, modes and contents
  SeedKind kind = SeedKind::kDirectory;
  std::vector<std::string> skipped;  // from the listing (submodules, nested repositories)
  std::size_t excluded = 0;          // entries seed.exclude left out
  bool streamed = false;           // file content is not in `data` (true but in snapshots built in memory)
};

// The listed seed, hashed as it streams from disk (see the top of this file).
// Refuses more than config.max_bytes of file content, naming the key.
Result<SeedSnapshot> snapshot_seed_source(const std::string& dir, const SeedConfig& config);

// The entry at `path`, or nullptr.
const SeedEntry* find_seed_entry(const SeedSnapshot& seed, std::string_view path);

// A file's content: `data` when the snapshot kept it, else read from disk
// (no symlink followed on the way) and checked against the entry's hash.
// Refuses a file larger than `max_bytes`.
Result<std::string> read_seed_file(const SeedSnapshot& seed, const SeedEntry& e,
                                   std::size_t max_bytes = std::size_t{64} << 20);

// One file of the private copy that differs from the seed.
struct FileWrite {
  std::string path;
  std::string content;
  unsigned mode = 0644;
  bool remove = false;  // the change deletes the file
};

// Writes the seed plus `writes` under `dest` (created, must not exist),
// streaming every unchanged file from disk and checking its hash on the way.
// Files keep their permission bits; directories are at least 0700.
Status write_seed_copy(const SeedSnapshot& seed, const std::vector<FileWrite>& writes, const std::string& dest);

// A seed entry's record for the JSON of `lazyagent-oci seed`: kind, mode, path, size, sha256.
nlohmann::json seed_summary_json(const SeedSnapshot& seed, bool with_entries);

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

// Gives the tree (`path` itself and everything beneath, symlinks themselves,
// never their targets) to host uid/gid: the private copy to the sandbox's
// root, which is a high host id under its user namespace and could not read
// a 0600 file of host root's.
Status chown_tree(const std::string& path, long uid, long gid);

// Removes a directory tree without following symlinks. Missing is fine.
Status remove_tree(const std::string& path);

}  // namespace lazyagent
