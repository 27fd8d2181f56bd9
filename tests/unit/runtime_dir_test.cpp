// util/runtime_dir: the machine-wide cache trusts only what this user owns
// (a poisoned cache could claim gVisor where runc runs). Against the real
// file system; the ownership cases chown to nobody, so they need root, as CI
// runs the suite.
#include "catch_compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "unit_tmp.h"
#include "util/runtime_dir.h"

using namespace lazyagent;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("runtime dir: made 0700 under a private XDG_RUNTIME_DIR, found again", "[runtime_dir]") {
  Tmp t;
  ::chmod(t.path.c_str(), 0700);
  auto dir = private_runtime_dir(t.path.c_str());
  REQUIRE(dir);
  CHECK(*dir == t.path + "/lazyagent");
  struct stat st {};
  REQUIRE(::lstat(dir->c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(st.st_uid == ::geteuid());
  auto again = private_runtime_dir(t.path.c_str());
  REQUIRE(again);
  CHECK(*again == *dir);
}

TEST_CASE("runtime dir: a base or a lazyagent directory others could write is refused", "[runtime_dir]") {
  Tmp t;
  SECTION("group-writable base") {
    ::chmod(t.path.c_str(), 0770);
    auto dir = private_runtime_dir(t.path.c_str());
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message.find("writable by group or others") != std::string::npos);
  }
  SECTION("lazyagent is a symlink to a directory of ours") {
    ::chmod(t.path.c_str(), 0700);
    REQUIRE(::mkdir((t.path + "/elsewhere").c_str(), 0700) == 0);
    REQUIRE(::symlink((t.path + "/elsewhere").c_str(), (t.path + "/lazyagent").c_str()) == 0);
    auto dir = private_runtime_dir(t.path.c_str());
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message.find("symlink") != std::string::npos);
  }
  SECTION("lazyagent readable by others") {
    ::chmod(t.path.c_str(), 0700);
    REQUIRE(::mkdir((t.path + "/lazyagent").c_str(), 0755) == 0);
    ::chmod((t.path + "/lazyagent").c_str(), 0755);
    auto dir = private_runtime_dir(t.path.c_str());
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message.find("0700") != std::string::npos);
  }
  SECTION("lazyagent owned by another user") {
    REQUIRE(::geteuid() == 0);  // the suite runs as root (CI); chown needs it
    ::chmod(t.path.c_str(), 0700);
    REQUIRE(::mkdir((t.path + "/lazyagent").c_str(), 0700) == 0);
    REQUIRE(::chown((t.path + "/lazyagent").c_str(), 65534, 65534) == 0);
    auto dir = private_runtime_dir(t.path.c_str());
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message.find("owned by uid 65534") != std::string::npos);
  }
  SECTION("a relative XDG_RUNTIME_DIR is not a runtime directory") {
    if (::geteuid() != 0) {
      CHECK_FALSE(private_runtime_dir("relative/dir"));
    } else {
      auto dir = private_runtime_dir("relative/dir");  // root falls back to /run
      REQUIRE(dir);
      CHECK(*dir == "/run/lazyagent");
    }
  }
}

TEST_CASE("runtime dir: only a regular file of ours, within its size, is read", "[runtime_dir]") {
  REQUIRE(::geteuid() == 0);  // chown to nobody below
  Tmp t;
  write(t.path + "/ok.json", "{\"a\":1}");
  auto ok = read_owned_file(t.path, "ok.json", 100);
  REQUIRE(ok);
  CHECK(*ok == "{\"a\":1}");

  CHECK_FALSE(read_owned_file(t.path, "missing.json", 100));
  CHECK(read_owned_file(t.path, "ok.json", 3).error().message.find("larger than 3") != std::string::npos);

  write(t.path + "/theirs.json", "{\"oci_runtime\":\"runsc\"}");
  REQUIRE(::chown((t.path + "/theirs.json").c_str(), 65534, 65534) == 0);
  CHECK(read_owned_file(t.path, "theirs.json", 100).error().message.find("owned by uid 65534") != std::string::npos);

  REQUIRE(::symlink((t.path + "/ok.json").c_str(), (t.path + "/link.json").c_str()) == 0);
  CHECK_FALSE(read_owned_file(t.path, "link.json", 100));

  REQUIRE(::mkfifo((t.path + "/fifo.json").c_str(), 0600) == 0);  // O_NONBLOCK: no hang
  CHECK(read_owned_file(t.path, "fifo.json", 100).error().message.find("not a regular file") != std::string::npos);
}
