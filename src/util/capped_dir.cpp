#include "util/capped_dir.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

extern char** environ;

namespace lazyagent {

namespace {

constexpr const char* kMkfs = "mkfs.ext4";

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Error sys_error(const std::string& what) { return engine_error(what + ": " + std::strerror(errno)); }

bool on_path(const char* name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  if (dirs.find("sbin") == std::string::npos) dirs += ":/usr/sbin:/sbin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

// mkfs.ext4 with stdout discarded and stderr's head kept for the message.
Status run_mkfs(const std::vector<std::string>& args) {
  char errpath[] = "/tmp/lazyagent-mkfs-XXXXXX";
  const int err_fd = ::mkstemp(errpath);
  if (err_fd < 0) return sys_error("mkstemp");
  ::unlink(errpath);
  Fd err(err_fd);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err.get(), 2);
  // The sbin directories: mkfs.ext4 is there, and a user's PATH may lack them.
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PATH=", 5) != 0) env_store.emplace_back(*e);
  }
  const char* path = std::getenv("PATH");
  env_store.push_back(std::string("PATH=/usr/sbin:/sbin:") + (path ? path : "/usr/bin:/bin"));
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, kMkfs, &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return engine_error(std::string("starting mkfs.ext4: ") + std::strerror(rc) + " (install e2fsprogs)");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok_status();
  char buf[512] = {};
  const ssize_t n = ::pread(err.get(), buf, sizeof buf - 1, 0);
  std::string msg = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "exit status " + std::to_string(WEXITSTATUS(status));
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return engine_error("mkfs.ext4 failed: " + msg);
}

// A free loop device bound to `image` (autoclear: it frees itself when the
// last user, the mount, goes), open for the caller.
Result<std::pair<int, std::string>> attach_loop(const std::string& image) {
  Fd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (ctl.get() < 0) return sys_error("opening /dev/loop-control");
  Fd file(::open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (file.get() < 0) return sys_error("opening " + image);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int n = ::ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return sys_error("finding a free loop device");
    const std::string dev = "/dev/loop" + std::to_string(n);
    if (::access(dev.c_str(), F_OK) != 0 && ::mknod(dev.c_str(), S_IFBLK | 0660, makedev(7, n)) != 0 && errno != EEXIST) {
      return sys_error("making " + dev);
    }
    const int loop = ::open(dev.c_str(), O_RDWR | O_CLOEXEC);
    if (loop < 0) return sys_error("opening " + dev);
    if (::ioctl(loop, LOOP_SET_FD, file.get()) != 0) {
      const int e = errno;
      ::close(loop);
      if (e == EBUSY) continue;  // another process took it first
      errno = e;
      return sys_error("binding " + dev + " to " + image);
    }
    struct loop_info64 info {};
    info.lo_flags = LO_FLAGS_AUTOCLEAR;
    std::strncpy(reinterpret_cast<char*>(info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
    if (::ioctl(loop, LOOP_SET_STATUS64, &info) != 0) {
      const int e = errno;
      (void)::ioctl(loop, LOOP_CLR_FD, 0);
      ::close(loop);
      errno = e;
      return sys_error("setting up " + dev);
    }
    return std::make_pair(loop, dev);
  }
  return engine_error("no free loop device after 8 tries (other processes took them)");
}

}  // namespace

std::string capped_dir_unsupported_reason() {
  if (::geteuid() != 0) return "mounting a size-capped filesystem needs root (this process runs as uid " + std::to_string(::geteuid()) + ")";
  if (::access("/dev/loop-control", R_OK | W_OK) != 0) return "/dev/loop-control is not usable: " + std::string(std::strerror(errno));
  if (!on_path(kMkfs)) return "mkfs.ext4 is not installed (install e2fsprogs)";
  return "";
}

bool is_mount_point(const std::string& dir) {
  struct stat self {}, parent {};
  if (::lstat(dir.c_str(), &self) != 0 || !S_ISDIR(self.st_mode)) return false;
  if (::lstat((dir + "/..").c_str(), &parent) != 0) return false;
  return self.st_dev != parent.st_dev || self.st_ino == parent.st_ino;
}

Status make_capped_dir(const std::string& image, const std::string& dir, std::int64_t bytes, std::int64_t inodes,
                       std::int64_t uid, std::int64_t gid) {
  {
    Fd f(::open(image.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (f.get() < 0) return sys_error("creating " + image);
    if (::ftruncate(f.get(), static_cast<off_t>(bytes)) != 0) return sys_error("sizing " + image);
  }
  // -m 0: no blocks kept for root (the sandbox's root would use them);
  // a 4 MiB journal instead of 32 MiB; the root directory owned by the
  // sandbox's mapped root, who writes there.
  if (auto st = run_mkfs({kMkfs, "-q", "-F", "-m", "0", "-J", "size=4", "-N", std::to_string(inodes), "-E",
                          "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid), image});
      !st) {
    return st;
  }
  if (auto st = mount_capped_dir(image, dir); !st) return st;
  // mkfs's lost+found would show in the copy (and in its diff).
  if (::rmdir((dir + "/lost+found").c_str()) != 0 && errno != ENOENT) return sys_error("removing lost+found in " + dir);
  return ok_status();
}

Status mount_capped_dir(const std::string& image, const std::string& dir) {
  if (is_mount_point(dir)) return ok_status();
  auto loop = attach_loop(image);
  if (!loop) return loop.error();
  Fd held(loop->first);  // closed after the mount holds the device (autoclear)
  if (::mount(loop->second.c_str(), dir.c_str(), "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") != 0) {
    const int e = errno;
    (void)::ioctl(held.get(), LOOP_CLR_FD, 0);
    errno = e;
    return sys_error("mounting " + image + " on " + dir);
  }
  return ok_status();
}

Status unmount_capped_dir(const std::string& dir) {
  if (!is_mount_point(dir)) return ok_status();
  if (::umount2(dir.c_str(), UMOUNT_NOFOLLOW) == 0) return ok_status();
  if (errno == EBUSY && ::umount2(dir.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) return ok_status();
  return sys_error("unmounting " + dir);
}

}  // namespace lazyagent
