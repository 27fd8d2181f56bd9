#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>


namespace lazyagent {

namespace {

std::string atomic_write_errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

Status write_file_atomic(const std::string& path, const std::string& data, Durability d) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const std::string dir = std::filesystem::path(path).parent_path().string();
  // A full disk names the directory and the space the write needed (the
  // temp file is gone by then: the old content, if any, stands).
  auto failed = [&](const std::string& what) {
    const int err = errno;
    if (is_disk_full_errno(err)) {
      return disk_full_error(dir, "writing " + std::filesystem::path(path).filename().string(), data.size());
    }
    return engine_error(atomic_write_errno_text(what, tmp));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return failed("creating");
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const Error e = failed("writing");
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    off += static_cast<std::size_t>(n);
  }
  if ((d == Durability::kSynced && ::fsync(fd) != 0) || ::close(fd) != 0) {
    const Error e = failed("syncing");
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = atomic_write_errno_text("renaming into", path);
    ::unlink(tmp.c_str());
    return engine_error(msg);
  }
  if (d == Durability::kRenameOnly) return ok_status();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return ok_status();
}

namespace {

// Room left for what a run writes after its copy (records, artifacts).
constexpr std::uint64_t kHeadroomBytes = 1 << 20;

}  // namespace

bool is_disk_full_errno(int err) { return err == ENOSPC || err == EDQUOT; }

std::int64_t free_bytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return -1;
  const auto blocks = ::geteuid() == 0 ? st.f_bfree : st.f_bavail;
  return static_cast<std::int64_t>(blocks) * static_cast<std::int64_t>(st.f_frsize);
}

Error disk_full_error(const std::string& dir, const std::string& what, std::uint64_t needed) {
  const std::int64_t free = free_bytes(dir);
  const std::string fix = "; free space on that filesystem (the run store is $XDG_STATE_HOME/lazyagent-oci) and run again";
  if (free >= 0 && static_cast<std::uint64_t>(free) >= needed) {
    // The filesystem refused a write that the free blocks would hold: what
    // ran out is what statvfs does not count as bytes (inodes, or the blocks
    // its own metadata needs).
    struct statvfs st {};
    const bool inodes_out = ::statvfs(dir.c_str(), &st) == 0 && st.f_files > 0 && st.f_favail == 0;
    return engine_error("no space left under " + dir + ": the filesystem refused " + what + " (" +
                        std::to_string(needed) + " bytes) with " + std::to_string(free) + " bytes still free: " +
                        (inodes_out ? std::string("it has no free inodes left")
                                    : std::string("it is nearly full (what is left goes to its own metadata)")) +
                        fix);
  }
  return engine_error("no space left under " + dir + ": " + what + " needs " + std::to_string(needed) + " bytes, " +
                      (free < 0 ? std::string("an unknown number") : std::to_string(free)) + " bytes are free there" +
                      fix);
}

Status check_free_space(const std::string& dir, const std::string& what, std::uint64_t needed) {
  const std::int64_t free = free_bytes(dir);
  if (free < 0 || static_cast<std::uint64_t>(free) >= needed + kHeadroomBytes) return ok_status();
  return disk_full_error(dir, what, needed + kHeadroomBytes);
}

}  // namespace lazyagent
