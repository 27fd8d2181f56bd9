// An exclusive flock(2) on a file, held for the object's life: one process at
// a time through a section (a baseline run, an environment build, the claim
// of a warm spare), across processes of this machine. Released when the
// object goes, or when its process dies: a crash never leaves it held.
#pragma once

#include <functional>
#include <string>

namespace lazyagent {

class FileLock {
 public:
  // Opens (creating, mode 0600, never through a symlink) and locks `path`,
  // waiting for another holder; `on_wait`, when given, is called once first
  // if it must wait. On failure (no such directory, EINTR) nothing is held
  // and error() says why.
  explicit FileLock(const std::string& path, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace lazyagent
