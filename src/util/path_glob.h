// Glob patterns over seed paths: config `seed.exclude` (seed_source.h).
//
// The rules, a subset of .gitignore's that users already know:
//   *        any run of characters within one path component (not '/')
//   ?        one character other than '/'
//   [abc] [a-z] [!abc]   one character of (or not of) a set
//   **       as a whole component: any number of components (`**/build`,
//            `docs/**`, `a/**/b`)
//   a pattern without '/' (a trailing one aside) matches the name of a file
//   or directory at any depth: `*.pyc`, `node_modules`
//   a trailing '/' matches directories only: `build/`
//   otherwise the pattern is matched against the whole path from the seed's
//   root (a leading '/' is allowed and only anchors): `docs/*.md`, `/dist`
// An excluded directory excludes everything beneath it. No negation ('!').
// Matching is linear in the path per pattern component (no exponential
// backtracking on hostile patterns): it runs over every path of a large seed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyagent {

class PathGlob {
 public:
  // `pattern` must be valid (glob_problem(pattern) empty).
  explicit PathGlob(std::string_view pattern);
  // Whether the entry at `path` (relative, '/'-separated) is matched; the
  // caller tests each ancestor directory itself (a walk prunes them).
  bool matches(std::string_view path, bool is_dir) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::vector<std::string> parts_;  // components; "**" for any number
  bool any_depth_ = false;          // no '/' in the pattern: match the last component
  bool dir_only_ = false;
};

// "" when the pattern is usable; else why not (one phrase, for config errors).
std::string glob_problem(std::string_view pattern);

// Whether any of the globs excludes `path` or one of its ancestor directories.
bool path_excluded(const std::vector<PathGlob>& globs, std::string_view path, bool is_dir);

std::vector<PathGlob> compile_globs(const std::vector<std::string>& patterns);

}  // namespace lazyagent
