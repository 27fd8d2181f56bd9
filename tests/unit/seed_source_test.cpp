// Seeds as git reads them and as directories: what is listed, what is left
// out (ignored files, .git, seed.exclude, submodules, nested repositories),
// the caps, and the streaming snapshot and copy (hashes equal to the old
// whole-read snapshot's; a file changed after the snapshot is refused).
#include "contract/seed_source.h"

#include "catch_compat.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "contract/seed_snapshot.h"
#include "unit_tmp.h"

using namespace lazyagent;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& data) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

void git(const std::string& dir, const std::string& args) {
  const std::string cmd = "git -C " + dir + " -c user.name=t -c user.email=t@example.invalid " + args + " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
}

std::vector<std::string> paths(const SeedListing& l) {
  std::vector<std::string> out;
  for (const auto& e : l.entries) out.push_back(e.path + (e.dir ? "/" : ""));
  return out;
}

// A repository: tracked files, an ignored directory, an untracked file, a
// file excluded by .git/info/exclude, a deleted tracked file.
std::string make_repo(const std::string& root) {
  const std::string r = root + "/repo";
  put(r + "/calculator.py", "def add(a, b):\n    return a - b\n");
  put(r + "/pkg/mod.py", "x = 1\n");
  put(r + "/pkg-data.txt", "d\n");
  put(r + "/gone.py", "gone\n");
  put(r + "/.gitignore", "build/\n*.log\n");
  git(r, "init -q");
  git(r, "add -A");
  git(r, "commit -q -m init");
  put(r + "/build/out.o", "obj");
  put(r + "/debug.log", "log");
  put(r + "/notes.md", "untracked\n");
  put(r + "/secret.env", "KEY=1\n");
  put(r + "/.git/info/exclude", "secret.env\n");
  fs::remove(r + "/gone.py");
  return r;
}

}  // namespace

TEST_CASE("seed_path_less: '/' sorts below every byte, parents before children", "[seed_source]") {
  CHECK(seed_path_less("a", "a/x"));
  CHECK(seed_path_less("a/x", "a-b"));
  CHECK(seed_path_less("a-b", "a.py"));
  CHECK(seed_path_less("pkg/z", "pkg.py"));
  CHECK_FALSE(seed_path_less("b", "a/x"));
}

TEST_CASE("a git work tree: tracked + untracked-not-ignored, never .git, deleted files left out", "[seed_source]") {
  Tmp t;
  const std::string r = make_repo(t.path);
  auto l = list_seed(r, SeedConfig{});
  REQUIRE(l.ok());
  CHECK(l->kind == SeedKind::kGit);
  CHECK(paths(*l) == std::vector<std::string>{".gitignore", "calculator.py", "notes.md", "pkg/", "pkg/mod.py",
                                              "pkg-data.txt"});
  SeedConfig with_git;
  with_git.include_git = true;
  auto g = list_seed(r, with_git);
  REQUIRE(g.ok());
  CHECK(g->entries.size() > l->entries.size() + 5);
  CHECK(std::any_of(g->entries.begin(), g->entries.end(), [](const ListedEntry& e) { return e.path == ".git/HEAD"; }));
  SeedConfig as_dir;
  as_dir.source = "directory";
  auto d = list_seed(r, as_dir);
  REQUIRE(d.ok());
  CHECK(d->kind == SeedKind::kDirectory);
  CHECK(paths(*d) == std::vector<std::string>{".gitignore", "build/", "build/out.o", "calculator.py", "debug.log",
                                              "notes.md", "pkg/", "pkg/mod.py", "pkg-data.txt", "secret.env"});
}

TEST_CASE("seed.exclude globs, in git and directory seeds alike", "[seed_source]") {
  Tmp t;
  const std::string r = make_repo(t.path);
  SeedConfig c;
  c.exclude = {"pkg/", "*.md"};
  auto l = list_seed(r, c);
  REQUIRE(l.ok());
  CHECK(paths(*l) == std::vector<std::string>{".gitignore", "calculator.py", "pkg-data.txt"});
  CHECK(l->excluded == 2);
  c.source = "directory";
  auto d = list_seed(r, c);
  REQUIRE(d.ok());
  CHECK(paths(*d) == std::vector<std::string>{".gitignore", "build/", "build/out.o", "calculator.py", "debug.log",
                                              "pkg-data.txt", "secret.env"});
}

TEST_CASE("submodules and nested repositories are skipped and named", "[seed_source]") {
  Tmp t;
  const std::string r = make_repo(t.path);
  const std::string inner = r + "/vendor/lib";
  put(inner + "/lib.py", "l = 1\n");
  git(inner, "init -q");
  git(inner, "add -A");
  git(inner, "commit -q -m lib");
  auto l = list_seed(r, SeedConfig{});
  REQUIRE(l.ok());
  CHECK(l->skipped == std::vector<std::string>{"vendor/lib: a nested git repository (not copied)"});
  git(r, "add vendor/lib");  // a gitlink: mode 160000
  auto s = list_seed(r, SeedConfig{});
  REQUIRE(s.ok());
  CHECK(s->skipped == std::vector<std::string>{"vendor/lib: a submodule (not copied)"});
  CHECK(std::none_of(s->entries.begin(), s->entries.end(), [](const ListedEntry& e) { return e.path.rfind("vendor", 0) == 0; }));
}

TEST_CASE("an ignored 20,000-file directory is neither listed nor read", "[seed_source]") {
  Tmp t;
  const std::string r = make_repo(t.path);
  for (int i = 0; i < 20000; ++i) put(r + "/build/gen/f" + std::to_string(i) + ".o", "x");
  SeedConfig c;
  c.max_files = 100;  // the ignored files do not count against the cap
  auto snap = snapshot_seed_source(r, c);
  REQUIRE(snap.ok());
  CHECK(snap->entries.size() == 6);
  REQUIRE(write_seed_copy(*snap, {}, t.path + "/copy").ok());
  CHECK_FALSE(fs::exists(t.path + "/copy/build"));
  CHECK_FALSE(fs::exists(t.path + "/copy/.git"));
  CHECK(fs::exists(t.path + "/copy/notes.md"));
}

TEST_CASE("caps: more entries or bytes than configured is refused, naming the key", "[seed_source]") {
  Tmp t;
  for (int i = 0; i < 5; ++i) put(t.path + "/s/f" + std::to_string(i), std::string(100, 'x'));
  SeedConfig c;
  c.max_files = 3;
  auto l = list_seed(t.path + "/s", c);
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().message == "seed " + t.path + "/s has more than 3 entries (4 so far); the limit is seed.max_files in the "
                             "config, which can be raised up to 10000000, or leave paths out with seed.exclude");
  c.max_files = 100;
  c.max_bytes = 250;
  auto s = snapshot_seed_source(t.path + "/s", c);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "seed " + t.path + "/s holds more than 250 bytes of files (300 so far); the limit is "
                             "seed.max_bytes in the config, which can be raised up to 1099511627776, or leave paths out "
                             "with seed.exclude");
}

TEST_CASE("the streaming snapshot hashes the same twice, copies check every file", "[seed_source]") {
  Tmp t;
  const std::string s = t.path + "/s";
  put(s + "/calculator.py", "def add(a, b):\n    return a - b\n");
  put(s + "/pkg/x.py", "x = 1\n");
  put(s + "/pkg.py", "p\n");
  put(s + "/run.sh", "#!/bin/sh\n");
  ::chmod((s + "/run.sh").c_str(), 0755);
  fs::create_symlink("/etc/passwd", s + "/link");
  fs::create_directories(s + "/empty");
  auto old = snapshot_seed_source(s, SeedConfig{});  // read again: the same identity
  auto now = snapshot_seed_source(s, SeedConfig{});
  REQUIRE(old.ok());
  REQUIRE(now.ok());
  CHECK(now->sha256 == old->sha256);
  CHECK(now->entries.size() == 7);
  CHECK(now->streamed);
  CHECK(now->bytes == old->bytes);
  const SeedEntry* calc = find_seed_entry(*now, "calculator.py");
  REQUIRE(calc != nullptr);
  CHECK(calc->data.empty());
  CHECK(find_seed_entry(*now, "pkg.py") != nullptr);  // the lookup agrees with the order
  CHECK(find_seed_entry(*now, "pkg/x.py") != nullptr);
  CHECK(read_seed_file(*now, *calc).value() == "def add(a, b):\n    return a - b\n");

  REQUIRE(write_seed_copy(*now, {{"calculator.py", "fixed\n", 0644, false}, {"pkg/x.py", "", 0644, true},
                                 {"new/dir/n.py", "n\n", 0644, false}},
                          t.path + "/copy")
              .ok());
  std::ifstream in(t.path + "/copy/calculator.py");
  CHECK(std::string((std::istreambuf_iterator<char>(in)), {}) == "fixed\n");
  CHECK_FALSE(fs::exists(t.path + "/copy/pkg/x.py"));
  CHECK(fs::exists(t.path + "/copy/new/dir/n.py"));
  CHECK(fs::is_symlink(t.path + "/copy/link"));
  CHECK(fs::is_directory(t.path + "/copy/empty"));
  CHECK((fs::status(t.path + "/copy/run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);

  // A file changed after the snapshot: the copy and the reader refuse it.
  put(s + "/pkg.py", "q\n");
  auto copy = write_seed_copy(*now, {}, t.path + "/copy2");
  REQUIRE_FALSE(copy.ok());
  CHECK(copy.error().message == "seed file " + s + "/pkg.py changed after the seed snapshot was taken; run again on a seed that is not changing");
  const SeedEntry* p = find_seed_entry(*now, "pkg.py");
  CHECK_FALSE(read_seed_file(*now, *p).ok());
  // A symlink swapped in for a directory after the snapshot is not followed.
  fs::remove_all(s + "/pkg");
  fs::create_symlink("/etc", s + "/pkg");
  const SeedEntry* x = find_seed_entry(*now, "pkg/x.py");
  CHECK_FALSE(read_seed_file(*now, *x).ok());
}

TEST_CASE("absolute_seed_path: what a run records, so that apply works from another directory", "[seed_source]") {
  const std::string cwd = std::filesystem::current_path().string();
  CHECK(absolute_seed_path(".") == cwd);
  CHECK(absolute_seed_path("./a/../b/") == (cwd == "/" ? "/b" : cwd + "/b"));
  CHECK(absolute_seed_path("/srv/calc/") == "/srv/calc");
  CHECK(absolute_seed_path("/") == "/");
  CHECK(absolute_seed_path("") == "");
}
