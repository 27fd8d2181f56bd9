// Which paths make up a seed: a directory read whole, or a git work tree
// read as git reads it. The snapshot (seed_snapshot.h), the private copy,
// the planner's view of the project and the provenance manifest all use
// this one list, so what the model sees is what is tested and recorded.
//
//   git       when the seed has `.git` (a directory, or the file of a linked
//             work tree) and `seed.source` is auto, or when it is `git`:
//             tracked files (`git ls-files --stage`) plus untracked files that
//             are not ignored (`git ls-files --others --exclude-standard`:
//             .gitignore files, .git/info/exclude, core.excludesFile). Tracked
//             files missing from the work tree are left out (the work tree is
//             what is tested); submodules and nested repositories are listed
//             in `skipped`, not copied. git runs guarded (git_process.h).
//   directory otherwise: every entry, walked without following symlinks.
// In both, `.git` itself (any directory named .git, in a plain directory) is
// left out unless `seed.include_git: true`, and `seed.exclude` globs
// (path_glob.h) leave out more; an excluded directory takes everything
// beneath it. More than `seed.max_files` entries (directories included) is
// refused with the key to raise.
//
// Order: parents before children, siblings by bytes with '/' lowest
// (seed_path_less), the order of a sorted walk; every lookup uses the same.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr std::int64_t kMaxSeedFilesCap = 10000000;
inline constexpr std::int64_t kMaxSeedBytesCap = std::int64_t{1} << 40;

enum class SeedKind { kDirectory, kGit };
const char* seed_kind_name(SeedKind k);  // "directory", "git"

struct ListedEntry {
  std::string path;  // relative, '/'-separated
  bool dir = false;  // a directory (its content is listed after it)
};

struct SeedListing {
  std::string root;                  // absolute, normalised, no trailing '/'
  SeedKind kind = SeedKind::kDirectory;
  std::vector<ListedEntry> entries;  // seed_path_less order
  std::vector<std::string> skipped;  // "lib/sub: a submodule", ...
  std::size_t excluded = 0;          // entries left out by seed.exclude (a directory counts once)
};

// '/' sorts below every other byte, so "a/x" < "a-b" < "a.py" < "ab".
bool seed_path_less(std::string_view a, std::string_view b);

Result<SeedListing> list_seed(const std::string& dir, const SeedConfig& config);

// `dir` made absolute against the working directory, normalised, with no
// trailing '/' (what a run records as its seed: `apply` may run elsewhere).
std::string absolute_seed_path(const std::string& dir);

// The entries a seed's config leaves to the sandbox; echoed in records.
nlohmann::json seed_source_json(const SeedListing& l, const SeedConfig& config);

}  // namespace lazyagent
