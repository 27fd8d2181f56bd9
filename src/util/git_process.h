// Running the `git` program on a user's work tree: listing a repository seed
// (seed_source.h) and committing an applied change (apply_run.h).
//
// git is run the same guarded way every time: `git -C DIR` with none of our
// GIT_* environment variables (they could point it at another repository),
// LC_ALL=C (its messages are shown as they are), stdin from /dev/null,
// `core.fsmonitor=false` (a repository's config could name a program to run
// on every read) and `safe.directory=DIR` (the user named this directory, and
// git 2.35+ refuses a repository another user owns, e.g. a user's repository
// read as root). Output is captured up to a bound; past it the run fails.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

struct GitRun {
  int exit_code = -1;
  std::string out;   // stdout, at most the bound
  std::string err;   // stderr, at most 64 KiB
};

// Runs git in `dir` with `args`. An Error when git cannot be started or its
// stdout passes `max_out` bytes; a non-zero exit is a GitRun to judge.
// `extra_env` ("NAME=value") is added after ours are dropped: the caller's
// own, e.g. GIT_INDEX_FILE for a private index.
Result<GitRun> run_git(const std::string& dir, const std::vector<std::string>& args, std::size_t max_out = 1 << 20,
                       const std::vector<std::string>& extra_env = {});

// stderr's last non-empty line, or "exit status N": for messages.
std::string git_failure(const GitRun& r);

}  // namespace lazyagent
