#include "pipeline/branch_commit.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/git_process.h"

namespace lazyagent {

namespace fs = std::filesystem;

namespace {

// A temporary directory removed with everything in it.
struct BranchTempDir {
  std::string path;
  ~BranchTempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// A file of the temporary work tree, with the mode the run proved.
Status write_plain_file(const std::string& path, const std::string& content, unsigned mode) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return engine_error("creating the directories of " + path + ": " + ec.message());
  if (auto st = write_file_atomic(path, content); !st) return st;
  if (::chmod(path.c_str(), mode & 0777) != 0) return engine_error("setting the mode of " + path + ": " + std::strerror(errno));
  return ok_status();
}

}  // namespace

Result<std::string> commit_on_new_branch(const std::string& repo, const std::string& branch,
                                         const std::vector<BranchFile>& files, const std::string& message,
                                         const std::vector<std::string>& git_config) {
  char tmpl[] = "/tmp/lazyagent-branch-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return engine_error(std::string("creating a temporary directory: ") + std::strerror(errno));
  BranchTempDir tmp{tmpl};
  const std::string tree_dir = tmp.path + "/tree";
  const std::vector<std::string> env = {"GIT_INDEX_FILE=" + tmp.path + "/index"};
  auto git = [&](std::vector<std::string> args, bool with_config = false) -> Result<GitRun> {
    const std::string what = args[0];
    if (with_config) args.insert(args.begin(), git_config.begin(), git_config.end());
    auto r = run_git(repo, args, 1 << 20, env);
    if (!r) return r.error();
    if (r->exit_code != 0) return engine_error("git " + what + " in " + repo + ": " + git_failure(*r));
    return r;
  };

  auto head = run_git(repo, {"rev-parse", "--verify", "--quiet", "HEAD^{commit}"});
  if (!head) return head.error();
  const std::string parent = head->exit_code == 0 ? head->out.substr(0, head->out.find('\n')) : "";
  if (!parent.empty()) {
    if (auto r = git({"read-tree", parent}); !r) return r.error();
  }
  if (::mkdir(tree_dir.c_str(), 0700) != 0) return engine_error("creating " + tree_dir + ": " + std::strerror(errno));
  std::vector<std::string> add = {"--work-tree=" + tree_dir, "add", "-A", "--"};
  std::vector<std::string> rm = {"rm", "--cached", "--ignore-unmatch", "-q", "--"};
  for (const auto& f : files) {
    if (f.deleted) {
      rm.push_back(f.path);
    } else {
      if (auto st = write_plain_file(tree_dir + "/" + f.path, f.content, f.mode); !st) return st.error();
      add.push_back(f.path);
    }
  }
  if (add.size() > 4) {
    if (auto r = git(add); !r) return r.error();
  }
  if (rm.size() > 5) {
    if (auto r = git(rm); !r) return r.error();
  }
  auto tree = git({"write-tree"});
  if (!tree) return tree.error();
  std::vector<std::string> commit = {"commit-tree", tree->out.substr(0, tree->out.find('\n'))};
  if (!parent.empty()) {
    commit.push_back("-p");
    commit.push_back(parent);
  }
  commit.push_back("-m");
  commit.push_back(message);
  auto made = git(commit, true);
  if (!made) return made.error();
  const std::string id = made->out.substr(0, made->out.find('\n'));
  if (auto r = git({"branch", branch, id}); !r) return r.error();
  return id;
}

}  // namespace lazyagent
