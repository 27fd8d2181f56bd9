#include "engine/podman/exit_file.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/interrupt.h"

namespace lazyagent {

std::string exit_dir_from_cmdline(const std::string& cmdline) {
  std::vector<std::string> args;
  std::string cur;
  for (char c : cmdline) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--exit-dir" && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--exit-dir=", 0) == 0) return args[i].substr(11);
  }
  return "";
}

std::string conmon_exit_dir(long conmon_pid) {
  if (conmon_pid <= 0) return "";
  std::ifstream f("/proc/" + std::to_string(conmon_pid) + "/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string dir = exit_dir_from_cmdline(ss.str());
  return !dir.empty() && dir[0] == '/' ? dir : "";
}

namespace {

// The file's exit code once it is complete (a number and nothing else).
bool read_exit_code(const std::string& path, int* code) {
  std::ifstream f(path);
  if (!f) return false;
  std::string text;
  std::getline(f, text);
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || (*end != '\0' && *end != '\n')) return false;
  *code = static_cast<int>(v);
  return true;
}

}  // namespace

Result<int> wait_for_exit_file(const std::string& path, long deadline_ms, const std::function<Status()>& alive) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  auto next_check = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAliveCheckMs);
  const std::string dir = path.substr(0, path.rfind('/'));
  // inotify wakes us when conmon writes it; the 20 ms poll bound covers a
  // watch that could not be set (and the file written before the watch).
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd >= 0) (void)::inotify_add_watch(fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
  int code = 0;
  for (;;) {
    if (read_exit_code(path, &code)) break;
    if (auto st = check_interrupted(); !st) {
      if (fd >= 0) ::close(fd);
      return st.error();
    }
    if (alive && std::chrono::steady_clock::now() >= next_check) {
      if (auto st = alive(); !st) {
        if (fd >= 0) ::close(fd);
        return st.error();
      }
      next_check = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAliveCheckMs);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      if (fd >= 0) ::close(fd);
      return Error{ErrorKind::kTimeout, "the container did not exit within " + std::to_string(deadline_ms) + " ms"};
    }
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long>(left, 20))) > 0) {
        char buf[4096];
        while (::read(fd, buf, sizeof buf) > 0) {
        }
      }
    } else {
      ::usleep(static_cast<useconds_t>(std::min<long>(left, 5) * 1000));
    }
  }
  if (fd >= 0) ::close(fd);
  return code;
}

}  // namespace lazyagent
