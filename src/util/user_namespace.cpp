#include "util/user_namespace.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#include "util/byte_frames.h"
#include "util/colon_records.h"

extern char** environ;

namespace lazyagent {

namespace {

constexpr std::size_t kMaxProgramStderr = 4096;
// Beyond max_answer: the frames and an error's message, whatever the value's cap.
constexpr std::size_t kAnswerSlack = 64 * 1024;

std::string read_text_file(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A pipe's two ends, closed when destroyed.
struct PipeEnds {
  int fd[2] = {-1, -1};
  bool open() { return ::pipe2(fd, O_CLOEXEC) == 0; }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  ~PipeEnds() {
    close_end(0);
    close_end(1);
  }
};

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads `fd` to its end. Past `max` bytes: with `keep_tail` the last `max`
// are kept (a program's stderr, drained so that it never blocks), else the
// reading stops and *over is set.
std::string read_to_end(int fd, std::size_t max, bool* over, bool keep_tail = false) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() <= max) continue;
    if (keep_tail) {
      out.erase(0, out.size() - max);
      continue;
    }
    out.resize(max);
    if (over) *over = true;
    break;
  }
  return out;
}

// Exactly `size` bytes from `fd` (false when it ended first).
bool read_exact(int fd, char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n ");
  if (end == std::string::npos) return "";
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The child: its namespace made (it says so, or why not, on `ready`), mapped
// once the parent writes to `go`, then fn's answer on `answer`. Never returns.
// The parent's ends are closed first: a copy of `go`'s write end kept here
// would keep the child waiting when the parent gives up.
[[noreturn]] void be_the_child(PipeEnds& ready, PipeEnds& go, PipeEnds& answer,
                               const std::function<Result<std::string>()>& fn) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::close(ready.fd[0]);
  ::close(go.fd[1]);
  ::close(answer.fd[0]);
  const int err = ::unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
  if (!write_all(ready.fd[1], reinterpret_cast<const char*>(&err), sizeof err) || err != 0) ::_exit(1);
  char c = 0;
  if (!read_exact(go.fd[0], &c, 1)) ::_exit(1);  // the parent could not map it
  std::string bytes;
  try {
    bytes = encode_child_answer(fn());
  } catch (const std::exception& e) {
    bytes = encode_child_answer(engine_error(std::string("in the user namespace: ") + e.what()));
  } catch (...) {
    bytes = encode_child_answer(engine_error("in the user namespace: an unknown exception"));
  }
  ::_exit(write_all(answer.fd[1], bytes.data(), bytes.size()) ? 0 : 1);
}

Error namespace_refused(const UserNsMap& map, int err) {
  return usage_error("making a user namespace for " + map.who + "'s subordinate ids: unshare: " + std::strerror(err) +
                     ": this host does not let users make user namespaces, which rootless podman needs as well "
                     "(sysctl user.max_user_namespaces must be above 0, and kernel.unprivileged_userns_clone 1 "
                     "where the kernel has it)");
}

}  // namespace

std::optional<IdRange> subordinate_range(const std::string& text, const std::string& user, unsigned uid) {
  for (const auto& f : colon_records(text)) {
    if (f.size() != 3) continue;
    if (f[0] != user && f[0] != std::to_string(uid)) continue;
    char* end = nullptr;
    const long long start = std::strtoll(f[1].c_str(), &end, 10);
    if (end == f[1].c_str() || *end != '\0') continue;
    const long long count = std::strtoll(f[2].c_str(), &end, 10);
    if (end == f[2].c_str() || *end != '\0' || count <= 0 || start <= 0) continue;
    return IdRange{start, count};
  }
  return std::nullopt;
}

UserNsMap rootless_user_map(const std::string& who, unsigned uid, unsigned gid, const IdRange& subuid,
                            const IdRange& subgid) {
  UserNsMap m;
  m.who = who;
  m.uids = {{0, uid, 1}, {1, subuid.start, subuid.count}};
  m.gids = {{0, gid, 1}, {1, subgid.start, subgid.count}};
  return m;
}

std::vector<std::string> id_map_arguments(long pid, const std::vector<IdMapLine>& lines) {
  std::vector<std::string> out = {std::to_string(pid)};
  for (const auto& l : lines) {
    out.push_back(std::to_string(l.inside));
    out.push_back(std::to_string(l.outside));
    out.push_back(std::to_string(l.count));
  }
  return out;
}

Result<UserNsMap> own_user_map() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  std::string user;
  if (const struct passwd* pw = ::getpwuid(uid)) user = pw->pw_name;
  const std::string who = user.empty() ? "uid " + std::to_string(uid) : user;
  const auto subuid = subordinate_range(read_text_file("/etc/subuid"), user, uid);
  const auto subgid = subordinate_range(read_text_file("/etc/subgid"), user, uid);
  if (!subuid || !subgid) {
    return usage_error(who + " has no subordinate ids in " + std::string(!subuid ? "/etc/subuid" : "/etc/subgid") +
                       ", which own what a rootless sandbox wrote: as root, run scripts/setup-rootless.sh " +
                       (user.empty() ? std::to_string(uid) : user));
  }
  return rootless_user_map(who, uid, gid, *subuid, *subgid);
}

std::string encode_child_answer(const Result<std::string>& answer) {
  std::string out;
  if (answer) {
    append_frame(&out, std::uint64_t{0});
    append_frame(&out, *answer);
  } else {
    append_frame(&out, static_cast<std::uint64_t>(answer.error().kind) + 1);
    append_frame(&out, answer.error().message);
  }
  return out;
}

Result<std::string> decode_child_answer(const std::string& bytes) {
  FrameReader in(bytes);
  std::uint64_t kind = 0;
  std::string payload;
  if (!in.next(&kind) || !in.next(&payload) || !in.at_end() ||
      kind > static_cast<std::uint64_t>(ErrorKind::kIsolation) + 1) {
    return engine_error("the user namespace's child answered " + std::to_string(bytes.size()) +
                        " bytes that are no answer (it stopped midway?)");
  }
  if (kind == 0) return payload;
  return Error{static_cast<ErrorKind>(kind - 1), payload};
}

Result<std::string> run_in_user_namespace(const UserNsMap& map, const std::function<Result<std::string>()>& fn,
                                          std::size_t max_answer) {
  PipeEnds ready, go, answer;
  if (!ready.open() || !go.open() || !answer.open()) return engine_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) return engine_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) be_the_child(ready, go, answer, fn);
  ready.close_end(1);
  go.close_end(0);
  answer.close_end(1);
  // From here the child is waited for on every path (closing `go` ends a waiting child).
  auto fail = [&](Error e) -> Result<std::string> {
    go.close_end(1);
    answer.close_end(0);
    (void)wait_for(child);
    return e;
  };
  int err = -1;
  if (!read_exact(ready.fd[0], reinterpret_cast<char*>(&err), sizeof err)) {
    return fail(engine_error("the user namespace's child ended before it made one"));
  }
  if (err != 0) return fail(namespace_refused(map, err));
  struct Helper {
    const char* program;
    const std::vector<IdMapLine>* lines;
    const char* file;
  };
  for (const Helper& h : {Helper{"newuidmap", &map.uids, "/etc/subuid"}, Helper{"newgidmap", &map.gids, "/etc/subgid"}}) {
    std::vector<std::string> argv = {h.program};
    for (auto& a : id_map_arguments(child, *h.lines)) argv.push_back(std::move(a));
    if (auto st = run_program(argv); !st) {
      Error e = st.error();
      if (e.kind == ErrorKind::kUsage) {
        e.message += ": it comes with package uidmap, which rootless podman needs as well (apt-get install uidmap)";
      } else {
        e = usage_error("mapping " + map.who + "'s ids into a user namespace: " + e.message + ": " + h.file +
                        " must give " + map.who +
                        " these ids (as root, scripts/setup-rootless.sh " + map.who + ")");
      }
      return fail(e);
    }
  }
  if (!write_all(go.fd[1], "g", 1)) return fail(engine_error("the user namespace's child ended before it was mapped"));
  go.close_end(1);
  bool over = false;
  const std::string bytes = read_to_end(answer.fd[0], max_answer + kAnswerSlack, &over);
  if (over) ::kill(child, SIGKILL);
  answer.close_end(0);
  const int status = wait_for(child);
  auto decoded = decode_child_answer(bytes);
  if (over || (decoded && decoded->size() > max_answer)) {
    return engine_error("the answer from the user namespace is larger than " + std::to_string(max_answer) + " bytes");
  }
  if (!decoded && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    return engine_error("the user namespace's child " +
                        (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                             : "exited " + std::to_string(WEXITSTATUS(status))) +
                        " before it answered");
  }
  return decoded;
}

Status run_program(const std::vector<std::string>& argv) {
  PipeEnds err;
  if (!err.open()) return engine_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  err.close_end(1);
  if (rc == ENOENT) return usage_error(argv[0] + " is not installed (not found in PATH)");
  if (rc != 0) return engine_error("starting " + argv[0] + ": " + std::strerror(rc));
  const std::string text = read_to_end(err.fd[0], kMaxProgramStderr, nullptr, true);
  err.close_end(0);
  const int status = wait_for(pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok_status();
  const std::string how = WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                          : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "failed";
  const std::string line = last_line(text);
  return engine_error("`" + joined(argv) + "` " + how + (line.empty() ? "" : ": " + line));
}

}  // namespace lazyagent
