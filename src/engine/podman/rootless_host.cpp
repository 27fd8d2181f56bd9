#include "engine/podman/rootless_host.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "contract/seed_snapshot.h"

namespace lazyagent {

namespace fs = std::filesystem;

namespace {

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC

std::string read_host_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool has_item(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string id_range_text(std::int64_t start, std::int64_t size) {
  return std::to_string(start) + ".." + std::to_string(start + size - 1);
}

}  // namespace

void fill_gaps(RootlessHost* h) {
  h->gaps.clear();
  h->gaps_reason.clear();
  if (!h->rootless) return;
  for (const char* item : {"memory", "pids", "cpu"}) {
    if (!h->cgroup_v2 || !has_item(h->delegated, item)) h->gaps.push_back(item);
  }
  if (h->gaps.empty()) return;
  h->gaps_reason = h->cgroup_v2
                       ? "rootless podman on cgroup v2 without those controllers delegated to user@" +
                             std::to_string(h->uid) + ".service: podman cannot set them"
                       : "rootless podman on cgroup v1: an unprivileged user gets no memory, pids or cpu "
                         "controller, and podman drops those limits (only cgroup v2 with delegation enforces them)";
}

RootlessHost rootless_host_of(const std::string& socket_path) {
  RootlessHost h;
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0 || st.st_uid == 0) return h;
  h.rootless = true;
  h.uid = st.st_uid;
  if (const struct passwd* pw = ::getpwuid(h.uid)) h.user = pw->pw_name;
  h.subuid = subordinate_range(read_host_file("/etc/subuid"), h.user, h.uid);
  h.subgid = subordinate_range(read_host_file("/etc/subgid"), h.user, h.uid);
  struct statfs sf {};
  h.cgroup_v2 = ::statfs("/sys/fs/cgroup", &sf) == 0 && static_cast<long>(sf.f_type) == kCgroup2Magic;
  if (h.cgroup_v2) {
    const std::string unit = "/sys/fs/cgroup/user.slice/user-" + std::to_string(h.uid) + ".slice/user@" +
                             std::to_string(h.uid) + ".service/cgroup.controllers";
    std::istringstream in(read_host_file(unit));
    for (std::string c; in >> c;) h.delegated.push_back(c);
  }
  fill_gaps(&h);
  return h;
}

Status adapt_policy_to_host(const RootlessHost& h, SandboxPolicy* policy) {
  policy->host_gaps = h.gaps;
  policy->host_gaps_reason = h.gaps_reason;
  policy->no_freezer = h.rootless && !h.cgroup_v2
                           ? "rootless podman on cgroup v1: an unprivileged user's containers get no freezer cgroup, "
                             "so podman cannot pause them"
                           : "";
  if (!h.rootless || !policy->userns.enabled) return ok_status();
  const std::string who = h.user.empty() ? "uid " + std::to_string(h.uid) : h.user;
  if (!h.subuid || !h.subgid) {
    return usage_error("the podman service runs as " + who + " (rootless), who has no subordinate ids in " +
                       std::string(!h.subuid ? "/etc/subuid" : "/etc/subgid") +
                       ": the sandbox's root must be one of them, never " + who +
                       "'s own uid; as root, run scripts/setup-rootless.sh " + who);
  }
  const std::int64_t have = std::min(h.subuid->count, h.subgid->count);
  if (have < policy->userns.size) {
    return usage_error("the podman service runs as " + who + " (rootless), who has " + std::to_string(have) +
                       " subordinate ids, fewer than the sandbox's " + std::to_string(policy->userns.size) +
                       " (user_namespace.size): give " + who + " more in /etc/subuid and /etc/subgid");
  }
  policy->userns.host_id = 1;  // the service's id 1 is the first subordinate id
  policy->userns.rootless = true;
  policy->userns.outer_uid = h.subuid->start;
  policy->userns.outer_gid = h.subgid->start;
  return ok_status();
}

Status hand_copy_to_sandbox(const std::string& path, const UserNamespace& u) {
  if (!u.enabled) return ok_status();
  if (!u.rootless) return chown_tree(path, u.host_id, u.host_id);
  auto one = [](const fs::path& p) -> Status {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return engine_error("reading " + p.string() + ": " + std::strerror(errno));
    if (S_ISLNK(st.st_mode)) return ok_status();
    mode_t mode = st.st_mode & 07777;
    mode |= S_IRUSR | S_IRGRP | S_IROTH;
    if (S_ISDIR(st.st_mode) || (mode & (S_IXUSR | S_IXGRP | S_IXOTH))) mode |= S_IXUSR | S_IXGRP | S_IXOTH;
    if (::chmod(p.c_str(), mode) != 0) {
      return usage_error("making " + p.string() + " readable by the sandbox's subordinate ids: " +
                         std::strerror(errno));
    }
    return ok_status();
  };
  if (auto st = one(path); !st) return st;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto st = one(it->path()); !st) return st;
  }
  if (ec) return engine_error("walking " + path + ": " + ec.message());
  return ok_status();
}

Result<std::string> read_in_service_userns(long ns_pid, const std::string& path, std::size_t max) {
  const std::string ns_path = "/proc/" + std::to_string(ns_pid) + "/ns/user";
  const int ns = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) return engine_error("opening " + ns_path + ": " + std::strerror(errno));
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ::close(ns);
    return engine_error(std::string("pipe: ") + std::strerror(errno));
  }
  const char* file = path.c_str();
  const pid_t child = ::fork();
  if (child == 0) {  // one thread: only system calls from here
    ::close(pipe_fds[0]);
    if (::setns(ns, CLONE_NEWUSER) != 0) ::_exit(10);
    const int fd = ::open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) ::_exit(11);
    char buf[16384];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n == 0) ::_exit(0);
      if (n < 0) ::_exit(12);
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::write(pipe_fds[1], buf + off, static_cast<std::size_t>(n - off));
        if (w <= 0) ::_exit(13);
        off += w;
      }
    }
  }
  ::close(ns);
  ::close(pipe_fds[1]);
  if (child < 0) {
    ::close(pipe_fds[0]);
    return engine_error(std::string("fork: ") + std::strerror(errno));
  }
  std::string out;
  char buf[16384];
  bool over = false;
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max) {
      over = true;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (over) return engine_error("reading " + path + ": larger than " + std::to_string(max) + " bytes");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const char* step = code == 10 ? "entering the service's user namespace" : code == 11 ? "opening" : "reading";
    return engine_error("reading " + path + " in the rootless service's user namespace (" + ns_path +
                        "): " + step + " failed");
  }
  return out;
}

Status check_rootless_network(const RootlessHost& h, const std::string& what) {
  if (!h.rootless || ::geteuid() != h.uid) return ok_status();
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return ok_status();
  }
  const int err = errno;
  return usage_error(what + " needs /dev/net/tun: rootless podman gives a container a network through slirp4netns, "
                     "which opens /dev/net/tun as " + (h.user.empty() ? "uid " + std::to_string(h.uid) : h.user) +
                     ", and opening it failed (" + std::strerror(err) +
                     "). As root: `chmod 0666 /dev/net/tun` (Debian's usual mode; scripts/setup-rootless.sh " +
                     (h.user.empty() ? "USER" : h.user) + " does it and restarts the user's service)");
}

std::string describe_mapping(const RootlessHost& h, const UserNamespace& u) {
  if (!u.enabled) return "no id mapping (gVisor's own root)";
  if (u.rootless) {
    return "rootless podman of " + (h.user.empty() ? "uid " + std::to_string(h.uid) : h.user) + " (uid " +
           std::to_string(h.uid) + "): sandbox ids map to its subordinate ids, host uids " +
           id_range_text(u.outer_uid, u.size) + ", gids " + id_range_text(u.outer_gid, u.size) + ", never uid " +
           std::to_string(h.uid);
  }
  return "sandbox ids map to host " + id_range_text(u.host_id, u.size);
}

}  // namespace lazyagent
