#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
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
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return engine_error(atomic_write_errno_text("creating", tmp));
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string msg = atomic_write_errno_text("writing", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return engine_error(msg);
    }
    off += static_cast<std::size_t>(n);
  }
  if ((d == Durability::kSynced && ::fsync(fd) != 0) || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return engine_error(atomic_write_errno_text("syncing", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = atomic_write_errno_text("renaming into", path);
    ::unlink(tmp.c_str());
    return engine_error(msg);
  }
  if (d == Durability::kRenameOnly) return ok_status();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return ok_status();
}

}  // namespace lazyagent
