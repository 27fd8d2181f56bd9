// The repository map in the planner's task: every file's path and size, and
// for source files their top-level definitions, so that a model sees the
// shape of a project whose files do not all fit the context. Pure but for
// reading the snapshot's files (read_seed_file, checked against its hashes).
//
// Top-level definitions, by the file's extension, read line by line (no parser):
//   Python         `def`, `async def`, `class` at column 0
//   Go             `func` (methods too) and `type` at column 0
//   C, C++         a function definition starting at column 0 (its line has a
//                  '(' and no ';', and the line or the next one opens '{'),
//                  `struct`/`class`/`enum`/`union` with a body, at column 0
//   Rust           fn, struct, enum, trait, impl, type, mod at column 0 (after
//                  pub, pub(...), async, unsafe, const, extern "C")
//   JavaScript/TS  function, async function, class, export ... at column 0
// Each definition is its first line up to the body ('{' or ':' or '='), at
// most kMaxDefinitionBytes. Bounded: definitions per file, and the whole map
// (paths first: when they alone do not fit, the rest is counted, not listed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "contract/seed_snapshot.h"

namespace lazyagent {

inline constexpr std::size_t kMaxDefinitionBytes = 120;

struct RepoMapLimits {
  std::size_t total_bytes = 16 * 1024;
  std::size_t definitions_per_file = 40;
  std::size_t source_bytes = 512 * 1024;  // a larger file gets no definitions
};

// The top-level definitions of one file, at most `max`; none for an unknown extension.
std::vector<std::string> top_level_definitions(std::string_view path, std::string_view content, std::size_t max = 40);

// "path (N B)" lines in path order, each followed by its definitions
// indented by two spaces; "" when total_bytes is 0.
std::string repo_map(const SeedSnapshot& seed, const RepoMapLimits& limits);

}  // namespace lazyagent
