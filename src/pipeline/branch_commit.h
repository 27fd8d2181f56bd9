// A commit on a new branch, made without touching the user's checkout:
// `apply --branch NAME` (apply_run.h) creates the branch as `git branch`
// does, beside the current one. HEAD, the index and the work tree stay as
// they are; `git switch NAME` takes the change.
//
// How: a private index (GIT_INDEX_FILE in a temporary directory) is read
// from HEAD's tree, the changed files are written under a temporary work
// tree and added from there (`git --work-tree=TMP add`, so the repository's
// filters and attributes apply as a `git add` would), deleted ones removed
// from that index (`git rm --cached`), then `write-tree`, `commit-tree -p
// HEAD` and `git branch NAME COMMIT`. Nothing under the user's .git but the
// new objects and the branch's ref is written; the temporary directory goes
// on every path. Hooks do not run (no `git commit`), as for `git branch`.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

struct BranchFile {
  std::string path;     // relative to the repository's top
  bool deleted = false;
  std::string content;  // the new content (not for a deletion)
  unsigned mode = 0644;
};

// Commits `files` over HEAD (or as a root commit in a repository with no
// commit yet) on the new branch `branch` of the work tree `repo`, with
// `message`; `git_config` are leading `-c NAME=VALUE` arguments (an identity
// when the user has none). Returns the new commit's id. The branch must not
// exist (the caller checks and names it).
Result<std::string> commit_on_new_branch(const std::string& repo, const std::string& branch,
                                         const std::vector<BranchFile>& files, const std::string& message,
                                         const std::vector<std::string>& git_config);

}  // namespace lazyagent
