#include "util/runtime_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lazyagent {

namespace {

// Why `path` is not a directory only this user (or, for a shared base such
// as /run, root) can write; empty when it is.
std::string untrusted_dir(const std::string& path, bool root_base_ok) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return path + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return path + " is not a directory (or is a symlink)";
  const uid_t me = ::geteuid();
  const bool root_owned_base = root_base_ok && st.st_uid == 0;
  if (st.st_uid != me && !root_owned_base) return path + " is owned by uid " + std::to_string(st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return path + " is writable by group or others";
  return "";
}

}  // namespace

Result<std::string> private_runtime_dir(const char* xdg_runtime_dir) {
  std::string base;
  bool root_base_ok = false;
  if (xdg_runtime_dir && *xdg_runtime_dir == '/') {
    base = xdg_runtime_dir;
  } else if (::geteuid() == 0) {
    base = "/run";
    root_base_ok = true;
  } else {
    return engine_error("no XDG_RUNTIME_DIR: no machine-wide cache for this user");
  }
  if (auto why = untrusted_dir(base, root_base_ok); !why.empty()) return engine_error("runtime directory: " + why);
  const std::string dir = base + "/lazyagent";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return engine_error("creating " + dir + ": " + std::strerror(errno));
  }
  if (auto why = untrusted_dir(dir, false); !why.empty()) return engine_error("runtime directory: " + why);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    return engine_error("runtime directory: " + dir + " is readable by others (want 0700)");
  }
  return dir;
}

Result<std::string> read_owned_file(const std::string& dir, const std::string& name, std::size_t max_bytes) {
  const std::string path = dir + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return engine_error(path + ": " + std::strerror(errno));
  struct stat st {};
  std::string out;
  std::string why;
  if (::fstat(fd, &st) != 0) why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if (st.st_uid != ::geteuid()) why = "owned by uid " + std::to_string(st.st_uid);
  else if (static_cast<std::size_t>(st.st_size) > max_bytes) why = "larger than " + std::to_string(max_bytes) + " bytes";
  if (why.empty()) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, &out[got], out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    out.resize(got);
  }
  ::close(fd);
  if (!why.empty()) return engine_error(path + ": " + why);
  return out;
}

}  // namespace lazyagent
