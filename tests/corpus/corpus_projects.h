// The corpus's projects and how each is prepared (tests/corpus/corpus_test.cpp
// proves them on podman, tests/k8s/k8s_environment_test.cpp on the cluster):
// the Debian source package fetched by scripts/debian-source.sh, put in a git
// repository, a bug injected and committed, the fix and a wrong fix as
// `git diff`s.
#pragma once

#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

namespace corpus {

using it::sh;
using it::TempDir;
using it::read_file;

struct CorpusProject {
  std::string package;               // Debian source package
  std::string file;                  // the file the bug is injected into
  std::string right, bug, wrong;     // one line each: upstream's, the bug, a wrong fix
  std::string config;                // the config without `seed:`
  std::vector<std::string> fixed;    // what the fix fixes (the tests the bug breaks), sorted
};

inline void put(const std::string& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline void git(const std::string& dir, const std::string& args) {
  REQUIRE(sh("git -C " + dir + " -c user.name=it -c user.email=it@example.invalid " + args + " >/dev/null 2>&1; echo $?") ==
          "0\n");
}

// `text` with the one occurrence of `from` replaced by `to`.
inline std::string replaced_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(from, at + 1) == std::string::npos);
  return text.replace(at, from.size(), to);
}

inline std::vector<std::string> sorted_strings(const nlohmann::json& list) {
  std::vector<std::string> v = list.get<std::vector<std::string>>();
  std::sort(v.begin(), v.end());
  return v;
}

// The project's git repository with the bug committed, and the fix and the
// wrong fix as `git diff`s (files under `dir`).
struct Prepared {
  TempDir dir;
  std::string repo, fix, wrong, fix_file, wrong_file;
};

inline void prepare(const CorpusProject& p, Prepared* out) {
  const std::string src = trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/debian-source.sh " + p.package + " 2>/dev/null"));
  INFO("scripts/debian-source.sh " << p.package << " gave '" << src << "' (the Debian mirror must be reachable the first time)");
  REQUIRE(std::filesystem::exists(src + "/" + p.file));
  TempDir& dir = out->dir;
  const std::string repo = dir.path() + "/" + p.package;
  std::filesystem::copy(src, repo, std::filesystem::copy_options::recursive);
  std::filesystem::remove(repo + "/.lazyagent-source");
  git(repo, "init -q -b main");
  git(repo, "add -A");
  git(repo, "commit -q -m 'upstream (Debian source package " + p.package + ")'");
  const std::string path = repo + "/" + p.file;
  const std::string upstream = read_file(path);
  const std::string buggy = replaced_once(upstream, p.right, p.bug);
  put(path, buggy);
  git(repo, "commit -q -am 'the injected bug'");
  put(path, upstream);
  const std::string fix = sh("git -C " + repo + " diff");
  put(path, replaced_once(buggy, p.bug, p.wrong));
  const std::string wrong = sh("git -C " + repo + " diff");
  put(path, buggy);
  REQUIRE(sh("git -C " + repo + " status --porcelain") == "");
  out->repo = repo;
  out->fix = fix;
  out->wrong = wrong;
  out->fix_file = dir.file("fix.diff", fix);
  out->wrong_file = dir.file("wrong.diff", wrong);
}

inline const std::string kPytestEnv =
    "environment:\n"
    "  setup: [apt-get update, \"apt-get install -y --no-install-recommends python3-pytest\"]\n";


inline CorpusProject ordered_set_project() {
  return {"python-ordered-set", "ordered_set/__init__.py", "                    self.map[k] = v - 1\n",
          "                    self.map[k] = v\n", "                    self.map[k] = v + 1\n",
          "allow: [ordered_set/]\ntest_command: python3 -m pytest -v -p no:cacheprovider\npatch: {format: diff}\n" +
              kPytestEnv,
          {"README.md", "test.test_ordered_set.test_remove"}};
}

// Configured, built and tested by CMake in a build directory under $TMPDIR
// (executable); each ctest test is one of cJSON's unity test programs.
inline CorpusProject cjson_project() {
  return {"cjson", "cJSON.c", "            h += (unsigned int) 10 + input[i] - 'a';\n",
          "            h += (unsigned int) input[i] - 'a';\n", "            h += (unsigned int) 10 + input[i] - 'A';\n",
          "allow: [cJSON.c]\n"
          "test_command: cmake -S . -B \"$TMPDIR/build\" && cmake --build \"$TMPDIR/build\" -j2 && "
          "ctest --test-dir \"$TMPDIR/build\"\n"
          "patch: {format: diff}\n"
          "limits: {work_tmpfs_mib: 128}\n"
          "environment:\n"
          "  setup: [apt-get update, \"apt-get install -y --no-install-recommends cmake make gcc libc6-dev\"]\n",
          {"parse_hex4", "parse_string"}};
}

}  // namespace corpus
