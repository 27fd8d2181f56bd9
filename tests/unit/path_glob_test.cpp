// seed.exclude globs: names at any depth, anchored paths, directories only,
// '**', classes, and the patterns config refuses.
#include "util/path_glob.h"

#include "catch_compat.h"

using namespace lazyagent;

namespace {
bool m(const char* pattern, const char* path, bool dir = false) { return PathGlob(pattern).matches(path, dir); }
}  // namespace

TEST_CASE("names at any depth, anchored paths, directory-only patterns", "[path_glob]") {
  CHECK(m("*.pyc", "a/b/c.pyc"));
  CHECK(m("*.pyc", "c.pyc"));
  CHECK_FALSE(m("*.pyc", "c.py"));
  CHECK(m("node_modules", "web/node_modules", true));
  CHECK(m("build/", "build", true));
  CHECK_FALSE(m("build/", "build", false));
  CHECK(m("docs/*.md", "docs/a.md"));
  CHECK_FALSE(m("docs/*.md", "x/docs/a.md"));
  CHECK_FALSE(m("docs/*.md", "docs/sub/a.md"));
  CHECK(m("/dist", "dist", true));
  CHECK_FALSE(m("/dist", "a/dist", true));
  CHECK(m("**/build", "a/b/build", true));
  CHECK(m("**/build", "build", true));
  CHECK(m("docs/**", "docs/a/b.md"));
  CHECK(m("a/**/b", "a/b"));
  CHECK(m("a/**/b", "a/x/y/b"));
  CHECK(m("f[0-9].txt", "f7.txt"));
  CHECK_FALSE(m("f[!0-9].txt", "f7.txt"));
  CHECK(m("?.py", "a.py"));
  CHECK_FALSE(m("?.py", "ab.py"));
  CHECK(m("\\*", "*"));
  CHECK_FALSE(m("\\*", "a"));
}

TEST_CASE("path_excluded tests the path and every ancestor directory", "[path_glob]") {
  const auto globs = compile_globs({"build/", "*.log"});
  CHECK(path_excluded(globs, "build/gen/f.o", false));
  CHECK(path_excluded(globs, "a/b.log", false));
  CHECK_FALSE(path_excluded(globs, "src/build.py", false));
  CHECK_FALSE(path_excluded({}, "anything", false));
}

TEST_CASE("hostile patterns stay linear", "[path_glob]") {
  const std::string path(4000, 'a');
  CHECK_FALSE(m("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", path.c_str()));
}

TEST_CASE("glob_problem: what config refuses", "[path_glob]") {
  CHECK(glob_problem("build/").empty());
  CHECK(glob_problem("") == "a glob pattern must not be empty");
  CHECK(glob_problem("/") == "'/' would exclude the whole seed");
  CHECK(glob_problem("!keep") == "negated patterns ('!') are not supported");
  CHECK(glob_problem("a/../b") == "'a/../b' has a '..' component");
  CHECK(glob_problem("a//b") == "'a//b' has an empty component ('//')");
  CHECK(glob_problem("f[0-9") == "'f[0-9' has a '[' without its ']'");
  CHECK(glob_problem("a\tb") == "a glob pattern must not hold control characters");
}
