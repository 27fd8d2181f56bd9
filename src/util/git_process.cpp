#include "util/git_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace lazyagent {

namespace {

constexpr std::size_t kMaxGitStderr = 64 * 1024;

std::vector<std::string> git_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (kv.rfind("GIT_", 0) == 0 || kv.rfind("LC_ALL=", 0) == 0) continue;
    env.push_back(kv);
  }
  env.push_back("LC_ALL=C");
  env.push_back("GIT_TERMINAL_PROMPT=0");
  return env;
}

struct GitPipeFd {
  int fd = -1;
  ~GitPipeFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<GitRun> run_git(const std::string& dir, const std::vector<std::string>& args, std::size_t max_out,
                       const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv_s = {"git", "-C", dir, "-c", "core.fsmonitor=false", "-c", "safe.directory=" + dir};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = git_environment();
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return engine_error(std::string("pipe: ") + std::strerror(errno));
  GitPipeFd out_r{out_pipe[0]}, out_w{out_pipe[1]};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return engine_error(std::string("pipe: ") + std::strerror(errno));
  GitPipeFd err_r{err_pipe[0]}, err_w{err_pipe[1]};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_w.fd, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "git", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return engine_error(std::string("starting git: ") + std::strerror(rc) + " (install git)");
  ::close(out_w.fd), out_w.fd = -1;
  ::close(err_w.fd), err_w.fd = -1;

  GitRun r;
  bool too_much = false;
  pollfd fds[2] = {{out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& dest = i == 0 ? r.out : r.err;
      const std::size_t cap = i == 0 ? max_out : kMaxGitStderr;
      if (dest.size() + static_cast<std::size_t>(n) > cap) {
        if (i == 0) too_much = true;
        dest.append(buf, cap - std::min(cap, dest.size()));
      } else {
        dest.append(buf, static_cast<std::size_t>(n));
      }
      if (too_much) {
        ::kill(pid, SIGKILL);
        open_fds = 0;
        break;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (too_much) {
    return engine_error("git " + (args.empty() ? std::string() : args[0]) + " in " + dir + " printed more than " +
                        std::to_string(max_out) + " bytes");
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

std::string git_failure(const GitRun& r) {
  std::string last, line;
  for (const char c : r.err) {
    if (c == '\n') {
      if (!line.empty()) last = line;
      line.clear();
    } else {
      line.push_back(c);
    }
  }
  if (!line.empty()) last = line;
  return last.empty() ? "exit status " + std::to_string(r.exit_code) : last;
}

}  // namespace lazyagent
