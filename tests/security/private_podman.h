// A podman service of a test's own, on a private socket under /run, started
// from / with runc and the machine's own storage (its images, its containers),
// and stopped by its pid: the chaos tests stop and start it to play an outage
// (a package upgrade, a crash, an out-of-memory kill) while the shared service
// on /run/podman/podman.sock, which other tests and sessions use, is never
// touched. Point the CLI at it with CONTAINER_HOST=container_host().
#pragma once

#include "catch_compat.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "harness.h"

namespace sec {

class PrivatePodman {
 public:
  PrivatePodman() : socket_("/run/lazyagent-chaos-" + std::to_string(getpid()) + ".sock") { start(); }
  ~PrivatePodman() {
    stop(SIGTERM);
    ::unlink(socket_.c_str());
  }
  void start() {
    ::unlink(socket_.c_str());
    pid_ = fork();
    if (pid_ == 0) {
      if (chdir("/") != 0) _exit(126);
      const int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      const std::string url = "unix://" + socket_;
      execlp("podman", "podman", "--runtime", "runc", "system", "service", "--time=0", url.c_str(), nullptr);
      _exit(127);
    }
    REQUIRE(it::wait_for([&] { return answers(); }, 30));
  }
  // Stops the service by its pid: `sig`, then SIGKILL after 10 s.
  void stop(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }
  bool answers() const {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_.c_str());
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (ok) {
      const char req[] = "GET /_ping HTTP/1.0\r\n\r\n";
      ok = write(fd, req, sizeof req - 1) > 0;
      char buf[64] = {};
      ok = ok && read(fd, buf, sizeof buf - 1) > 0 && std::string(buf).find(" 200 ") != std::string::npos;
    }
    close(fd);
    return ok;
  }
  std::string container_host() const { return "unix://" + socket_; }

 private:
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace sec
