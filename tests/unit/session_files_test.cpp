// A session's working copy read and written as hostile input
// (pipeline/session_files.h), the session record's expiry and ids
// (pipeline/session_store.h), and the create request of a session command
// (policy/sandbox_policy.h): no podman needed.
#include "catch_compat.h"

#include <algorithm>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config.h"
#include "pipeline/session_files.h"
#include "pipeline/session_store.h"
#include "policy/sandbox_policy.h"

using namespace lazyagent;
namespace fs = std::filesystem;

namespace {

struct Tree {
  std::string root;
  Tree() {
    char tmpl[] = "/tmp/lazyagent-session-unit-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~Tree() { fs::remove_all(root); }
  void file(const std::string& rel, const std::string& content) const {
    fs::create_directories(fs::path(root + "/" + rel).parent_path());
    std::ofstream(root + "/" + rel, std::ios::binary) << content;
  }
};

Config demo_config() {
  Config c;
  c.allow = {"calculator.py", "new.py"};
  return c;
}

}  // namespace

TEST_CASE("read_copy_file refuses links, FIFOs, large files and bad paths without following or blocking", "[session]") {
  Tree t;
  t.file("a.py", "print(1)\n");
  t.file("dir/b.py", "b\n");
  fs::create_symlink("/etc/passwd", t.root + "/link.py");
  fs::create_directory_symlink("/etc", t.root + "/etcdir");
  REQUIRE(::mkfifo((t.root + "/fifo.py").c_str(), 0644) == 0);
  REQUIRE(::truncate((t.file("big.bin", ""), (t.root + "/big.bin").c_str()), 1LL << 30) == 0);

  CHECK(*read_copy_file(t.root, "a.py", 1024) == "print(1)\n");
  CHECK(*read_copy_file(t.root, "dir/b.py", 1024) == "b\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto link = read_copy_file(t.root, "link.py", 1 << 20);
  REQUIRE_FALSE(link.ok());
  CHECK(link.error().message == "path link.py is a symlink in the working copy: not followed");
  auto through = read_copy_file(t.root, "etcdir/passwd", 1 << 20);
  REQUIRE_FALSE(through.ok());
  CHECK(through.error().message ==
        "path etcdir/passwd: etcdir in the working copy is not a directory (a symlink is never followed)");
  auto fifo = read_copy_file(t.root, "fifo.py", 1 << 20);
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.error().message == "path fifo.py is not a regular file in the working copy (a fifo, socket or device): not read");
  auto big = read_copy_file(t.root, "big.bin", 1 << 20);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message == "path big.bin is 1073741824 bytes, more than the 1048576 a read returns");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  for (const char* bad : {"../x", "/etc/passwd", "a/../b", "a\x01.py"}) {
    auto r = read_copy_file(t.root, bad, 1024);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kUsage);
  }
}

TEST_CASE("write_copy_file replaces a planted link instead of writing through it", "[session]") {
  Tree t, outside;
  outside.file("victim.txt", "keep\n");
  fs::create_symlink(outside.root + "/victim.txt", t.root + "/calculator.py");
  REQUIRE(write_copy_file(t.root, "calculator.py", "fixed\n", -1, -1).ok());
  CHECK(fs::is_regular_file(fs::symlink_status(t.root + "/calculator.py")));
  CHECK(*read_copy_file(t.root, "calculator.py", 1024) == "fixed\n");
  CHECK(*read_copy_file(outside.root, "victim.txt", 1024) == "keep\n");
  // A link as a directory on the way is refused, never followed.
  fs::create_directory_symlink(outside.root, t.root + "/sub");
  auto through = write_copy_file(t.root, "sub/victim.txt", "x", -1, -1);
  REQUIRE_FALSE(through.ok());
  CHECK(*read_copy_file(outside.root, "victim.txt", 1024) == "keep\n");
  // Missing directories are made.
  REQUIRE(write_copy_file(t.root, "pkg/deep/new.py", "n\n", -1, -1).ok());
  CHECK(*read_copy_file(t.root, "pkg/deep/new.py", 1024) == "n\n");
}

TEST_CASE("diff_copy writes the change as a diff the contract judges, and refuses what a patch cannot carry", "[session]") {
  Tree base, work;
  for (Tree* t : {&base, &work}) {
    t->file("calculator.py", "def add(a, b):\n    return a - b\n");
    t->file("test_calculator.py", "import calculator\n");
  }
  work.file("calculator.py", "def add(a, b):\n    return a + b\n");
  work.file(std::string(kSessionScratchName) + "/junk", "scratch\n");
  auto d = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE(d.ok());
  CHECK(d->changed_paths == std::vector<std::string>{"calculator.py"});
  CHECK(d->diff ==
        "diff --git a/calculator.py b/calculator.py\n--- a/calculator.py\n+++ b/calculator.py\n"
        "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n");
  CHECK(d->findings.empty());

  // A change off the allow list: the contract's finding, as prove would refuse it.
  work.file("test_calculator.py", "import calculator  # changed\n");
  d = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE(d.ok());
  REQUIRE_FALSE(d->findings.empty());
  CHECK(d->findings[0].path == "test_calculator.py");

  // A planted link: a finding, never read through.
  fs::remove(work.root + "/test_calculator.py");
  work.file("test_calculator.py", "import calculator\n");
  fs::create_symlink("/etc/passwd", work.root + "/new.py");
  d = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE(d.ok());
  REQUIRE(d->findings.size() == 1);
  CHECK(d->findings[0].code == "symlink");
  CHECK(d->diff.find("root:") == std::string::npos);

  // A FIFO and a sparse file past the cap: refused, without blocking or reading them.
  fs::remove(work.root + "/new.py");
  REQUIRE(::mkfifo((work.root + "/fifo").c_str(), 0644) == 0);
  auto fifo = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.error().message.find("special file") != std::string::npos);
  fs::remove(work.root + "/fifo");
  work.file("big.bin", "");
  REQUIRE(::truncate((work.root + "/big.bin").c_str(), 1LL << 30) == 0);
  auto big = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.find("reading the working copy") == 0);
}

TEST_CASE("a working copy's changes come back from the user's namespace byte for byte, or not at all", "[session]") {
  Tree base, work;
  base.file("calculator.py", "def add(a, b):\n    return a - b\n");
  base.file("gone.py", "x = 1\n");
  work.file("calculator.py", "def add(a, b):\n    return a + b\n");
  work.file("new.py", std::string("bin\0ary\xff\n", 9));
  fs::create_symlink("/etc/passwd", work.root + "/link.py");
  ::chmod((work.root + "/new.py").c_str(), 0755);
  auto read = read_copy_changes(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE(read.ok());
  REQUIRE(read->changes.size() == 3);
  REQUIRE(read->findings.size() == 1);
  const std::string bytes = encode_copy_changes(*read);
  auto back = decode_copy_changes(bytes);
  REQUIRE(back.ok());
  REQUIRE(back->changes.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    const TextChange &a = read->changes[i], &b = back->changes[i];
    CHECK((a.path == b.path && a.op == b.op && a.old_content == b.old_content && a.new_content == b.new_content &&
           a.old_mode == b.old_mode && a.new_mode == b.new_mode));
  }
  CHECK(back->changes[1].new_content == std::string("bin\0ary\xff\n", 9));
  CHECK(back->changes[1].new_mode == 0100755u);
  CHECK(back->findings[0].code == "symlink");
  CHECK(back->findings[0].message == read->findings[0].message);
  // Judged outside as diff_copy judges: the same diff and findings.
  auto judged = judge_copy_changes(std::move(*back), demo_config());
  auto direct = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE((judged.ok() && direct.ok()));
  CHECK(judged->diff == direct->diff);
  CHECK(judged->changed_paths == direct->changed_paths);
  CHECK(judged->findings.size() == direct->findings.size());
  // A cut answer (a child killed midway) is an error, never a shorter diff.
  for (std::size_t cut : {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
    auto partial = decode_copy_changes(bytes.substr(0, cut));
    REQUIRE_FALSE(partial.ok());
    CHECK(partial.error().message == "the working copy's changes came back malformed");
  }
  CHECK_FALSE(decode_copy_changes(bytes + "x").ok());
}

TEST_CASE("a session expires when idle past its TTL or older than its maximum age", "[session]") {
  SessionRecord r;
  r.created = 1000;
  r.last_used = 1500;
  r.idle_ttl_seconds = 600;
  r.max_age_seconds = 3600;
  CHECK(session_expiry(r, 2000) == "");
  CHECK(session_expiry(r, 2101) == "idle for 601 s, past sessions.idle_ttl_seconds (600)");
  r.last_used = 4500;
  CHECK(session_expiry(r, 4601) == "open for 3601 s, past sessions.max_age_seconds (3600)");
  r.disk_bytes = 64 << 20;
  r.max_files = 2048;
  r.uncapped = "why not";
  r.accept_weaker_policy = true;
  r.rootless = true;
  auto back = session_from_json(session_to_json(r));
  REQUIRE(back.ok());
  CHECK(session_to_json(*back) == session_to_json(r));
  CHECK(back->disk_bytes == 64 << 20);
  CHECK(back->accept_weaker_policy);
  CHECK(back->rootless);
  nlohmann::json older = session_to_json(r);  // a record from before `rootless`: root's
  older.erase("rootless");
  CHECK_FALSE(session_from_json(older)->rootless);
  CHECK(is_session_id(new_session_id()));
  CHECK_FALSE(is_session_id("r-20261205-000000-abcdef"));
  CHECK_FALSE(is_session_id("s-../../etc"));
}

TEST_CASE("a session command's container gets its copy read-write at /work and runs the session script", "[session]") {
  SandboxRequest req;
  req.policy = policy_from_config(Config{}, 60);
  req.name = "lazyagent-sandbox-s-1-1";
  req.work_copy_path = "/state/sessions/s-1/work";
  req.test_command = "make test";
  const auto spec = build_create_spec(req);
  const auto& mounts = spec["mounts"];
  REQUIRE(mounts[0]["destination"] == "/work");
  CHECK(mounts[0]["type"] == "bind");
  CHECK(mounts[0]["source"] == "/state/sessions/s-1/work");
  CHECK(mounts[0]["options"] == nlohmann::json({"bind", "rw", "nosuid", "nodev"}));
  CHECK(mounts[1]["destination"] == "/tmp");
  CHECK(mounts.size() == 2);  // no /seed
  CHECK(spec["command"][3] == "lazyagent-session");
  CHECK(spec["command"][4] == "make test");
  CHECK(spec["command"][2].get<std::string>().find("cp -R") == std::string::npos);
  CHECK(spec["netns"]["nsmode"] == "none");
}

TEST_CASE("diff_copy leaves out the new files of a tool's tagged cache directory (pytest's .pytest_cache), and only those",
          "[session][quick]") {
  Tree base, work;
  for (Tree* t : {&base, &work}) {
    t->file("calculator.py", "def add(a, b):\n    return a - b\n");
    t->file("cache/seed.txt", "the seed's\n");
  }
  work.file("calculator.py", "def add(a, b):\n    return a + b\n");
  const std::string tag = "Signature: 8a477f597d28d172789f06886806bc55\n# pytest cache directory\n";
  work.file(".pytest_cache/CACHEDIR.TAG", tag);
  work.file(".pytest_cache/v/cache/nodeids", "[]\n");
  work.file("cache/CACHEDIR.TAG", tag);     // a tag planted in a seed directory:
  work.file("cache/seed.txt", "changed\n"); // the seed's file stays in the diff
  work.file("cache/new.txt", "new\n");
  work.file("fake/CACHEDIR.TAG", "not the signature\n");  // no signature: no cache
  auto d = diff_copy(base.root, work.root, demo_config(), 1 << 20);
  REQUIRE(d.ok());
  CHECK(d->changed_paths == std::vector<std::string>{"cache/seed.txt", "calculator.py", "fake/CACHEDIR.TAG"});
  std::vector<std::string> ignored = d->ignored;
  std::sort(ignored.begin(), ignored.end());
  CHECK(ignored == std::vector<std::string>{".pytest_cache/CACHEDIR.TAG", ".pytest_cache/v/cache/nodeids",
                                            "cache/CACHEDIR.TAG", "cache/new.txt"});
}

TEST_CASE("diff_copy leaves out new files the seed's repository ignores, by its rules, not the copy's", "[session]") {
  Tree seed, base, work;
  seed.file(".gitignore", "*.out\n__pycache__/\n");
  REQUIRE(std::system(("git -C " + seed.root + " init -q >/dev/null 2>&1").c_str()) == 0);
  for (Tree* t : {&base, &work}) {
    t->file(".gitignore", "*.out\n__pycache__/\n");
    t->file("calculator.py", "def add(a, b):\n    return a - b\n");
  }
  work.file("calculator.py", "def add(a, b):\n    return a + b\n");
  work.file("parser.out", "generated\n");
  work.file("__pycache__/calculator.cpython-311.pyc", "junk");
  work.file("new.py", "x = 1\n");
  // The copy's own .gitignore is the sandbox's: hiding new.py there changes nothing.
  work.file(".gitignore", "*.out\n__pycache__/\nnew.py\n");
  Config c = demo_config();
  c.allow.push_back(".gitignore");
  c.seed = seed.root;
  auto d = diff_copy(base.root, work.root, c, 1 << 20);
  REQUIRE(d.ok());
  CHECK(d->ignored == std::vector<std::string>{"__pycache__/calculator.cpython-311.pyc", "parser.out"});
  CHECK(d->changed_paths == std::vector<std::string>{".gitignore", "calculator.py", "new.py"});
  CHECK(d->findings.empty());
  // A seed read as a plain directory has no ignore rules: everything new is in the diff.
  c.seed_options.source = "directory";
  d = diff_copy(base.root, work.root, c, 1 << 20);
  REQUIRE(d.ok());
  CHECK(d->ignored.empty());
  CHECK(d->changed_paths.size() == 5);
}
