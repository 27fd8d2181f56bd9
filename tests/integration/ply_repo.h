// PLY 3.11 (Python Lex-Yacc) from Debian's `ply` source package
// (scripts/debian-source.sh, cached, never committed) as a git repository with
// a bug committed: the real project the integration tests (real_project_test)
// and the Kubernetes eval at scale (tests/k8s) prove fixes on.
#pragma once

#include "test_paths.h"
#include "catch_compat.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "harness.h"

namespace it {

inline void ply_put(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

inline void ply_git(const std::string& dir, const std::string& args) {
  REQUIRE(sh("git -C " + dir + " -c user.name=it -c user.email=it@example.invalid " + args + " >/dev/null 2>&1; echo $?") ==
          "0\n");
}

inline std::string ply_trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// PLY as a git repository with the bug committed.
struct PlyRepo {
  // The bug: YaccProduction.__getitem__ reads one symbol to the left.
  static inline const std::string kBug = "            return self.slice[n - 1].value\n";
  static inline const std::string kRight = "            return self.slice[n].value\n";
  TempDir dir;
  std::string repo;
  PlyRepo() {
    const std::string src = ply_trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/debian-source.sh ply 2>/dev/null"));
    INFO("scripts/debian-source.sh ply gave '" << src << "' (the Debian mirror must be reachable the first time)");
    REQUIRE(std::filesystem::exists(src + "/ply/yacc.py"));
    repo = dir.path() + "/ply";
    std::filesystem::copy(src, repo, std::filesystem::copy_options::recursive);
    std::filesystem::remove(repo + "/.lazyagent-source");
    ply_put(repo + "/.gitignore", "*.pyc\n__pycache__/\ntest/parser.out\ntest/parsetab.py\ntest/lextab.py\n");
    ply_git(repo, "init -q -b main");
    ply_git(repo, "add -A");
    ply_git(repo, "commit -q -m 'ply 3.11 (Debian source package ply)'");
    std::string yacc = read_file(yacc_path());
    REQUIRE(yacc.size() > 12000);
    const auto at = yacc.find(kRight);
    REQUIRE(at != std::string::npos);
    yacc.replace(at, kRight.size(), kBug);
    ply_put(yacc_path(), yacc);
    ply_git(repo, "commit -q -am 'yacc: an off-by-one in YaccProduction.__getitem__'");
    // Build output a developer would have lying around: ignored, never copied.
    std::filesystem::create_directories(repo + "/test/__pycache__");
    ply_put(repo + "/test/__pycache__/junk.cpython-311.pyc", "junk");
  }
  std::string yacc_path() const { return repo + "/ply/yacc.py"; }
  // The fix as `git diff` writes it (the work tree is restored afterwards).
  std::string git_diff() const {
    const std::string buggy = read_file(yacc_path());
    std::string fixed = buggy;
    fixed.replace(fixed.find(kBug), kBug.size(), kRight);
    ply_put(yacc_path(), fixed);
    const std::string d = sh("git -C " + repo + " diff");
    ply_put(yacc_path(), buggy);
    return d;
  }
  // The fix as `diff -u` writes it, from outside the tree.
  std::string plain_diff() const {
    std::string fixed = read_file(yacc_path());
    fixed.replace(fixed.find(kBug), kBug.size(), kRight);
    std::filesystem::create_directories(dir.path() + "/fixed/ply");
    ply_put(dir.path() + "/fixed/ply/yacc.py", fixed);
    return sh("cd " + dir.path() + " && diff -u ply/ply/yacc.py fixed/ply/yacc.py");
  }
  std::string config(const TempDir& where, const std::string& extra = "") const {
    return where.file("config.yaml",
                      "seed:\n  path: " + repo + "\n  exclude: [doc/, example/]\nallow: [ply/]\n"
                      "test_command: unset PYTHONDONTWRITEBYTECODE; cd test && python3 testlex.py -v && python3 testyacc.py -v\n"
                      "patch:\n  format: diff\n  max_files: 20\n  max_diff_bytes: 65536\n  max_changed_lines: 2000\n" +
                          extra);
  }
};

}  // namespace it
