// util/capped_dir.h against the real kernel: a loop-mounted ext4 image caps
// the bytes and files written under a directory, survives an unmount (a
// reboot) and leaves no loop device behind. Root only, as the feature is: as
// any other user the reason it cannot be had is checked instead.
#include "catch_compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "util/capped_dir.h"

using namespace lazyagent;
namespace fs = std::filesystem;

namespace {

// Writes `bytes` zeros to `path`; returns the errno that stopped it (0: all written).
int write_zeros(const std::string& path, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  std::vector<char> block(1 << 20, 0);
  int err = 0;
  for (std::size_t done = 0; done < bytes; done += block.size()) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
      err = errno ? errno : ENOSPC;
      break;
    }
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  return err;
}

// A loop device backed by `image` (the kernel's own list in /sys/block).
bool loop_attached(const std::string& image) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/block", ec)) {
    std::ifstream in(e.path() / "loop" / "backing_file");
    std::string backing;
    if (in && std::getline(in, backing) && backing == image) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a capped directory stops writes at its size and file count, and mounts again after an unmount", "[capped]") {
  if (::geteuid() != 0) {
    CHECK(capped_dir_unsupported_reason().find("needs root") != std::string::npos);
    return;
  }
  REQUIRE(capped_dir_unsupported_reason().empty());
  char tmpl[] = "/tmp/lazyagent-capped-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string base = tmpl, image = base + "/work.img", dir = base + "/work";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  REQUIRE(make_capped_dir(image, dir, 32 << 20, 1024, 4242, 4343).ok());
  CHECK(is_mount_point(dir));
  CHECK(loop_attached(image));
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK(st.st_uid == 4242u);
  CHECK(st.st_gid == 4343u);
  CHECK_FALSE(fs::exists(dir + "/lost+found"));
  CHECK(fs::is_empty(dir));

  CHECK(write_zeros(dir + "/big", 64 << 20) == ENOSPC);
  REQUIRE(::stat(image.c_str(), &st) == 0);
  CHECK(st.st_blocks * 512 <= (32 << 20));
  fs::remove(dir + "/big");
  int made = 0, err = 0;
  for (; made < 2000; ++made) {
    const int fd = ::open((dir + "/f" + std::to_string(made)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      err = errno;
      break;
    }
    ::close(fd);
  }
  CHECK(err == ENOSPC);
  CHECK(made < 1024);
  fs::remove(dir + "/f0");  // room for one more file
  std::ofstream(dir + "/kept") << "kept";

  REQUIRE(unmount_capped_dir(dir).ok());
  CHECK_FALSE(is_mount_point(dir));
  CHECK_FALSE(fs::exists(dir + "/kept"));
  CHECK_FALSE(loop_attached(image));  // autoclear
  REQUIRE(mount_capped_dir(image, dir).ok());
  REQUIRE(mount_capped_dir(image, dir).ok());  // idempotent: one mount
  CHECK(fs::exists(dir + "/kept"));
  REQUIRE(unmount_capped_dir(dir).ok());
  CHECK_FALSE(is_mount_point(dir));
  CHECK(unmount_capped_dir(dir).ok());  // not mounted: fine
  CHECK_FALSE(loop_attached(image));
  // An image that exists already is not made over.
  CHECK_FALSE(make_capped_dir(image, dir, 32 << 20, 1024, 0, 0).ok());
  fs::remove_all(base);
}
