#include "provider/proxy_egress_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <cstring>

namespace lazyagent {
namespace {

using Clock = std::chrono::steady_clock;

std::string outcome_of(int err) {
  switch (err) {
    case 0: return "connected";
    case ECONNREFUSED: return "refused";
    case ENETUNREACH:
    case EHOSTUNREACH: return "unreachable";
    case ETIMEDOUT: return "timeout";
    default: return "error:" + std::to_string(err);
  }
}

bool ipv4_endpoint(const std::string& hp, sockaddr_in* out) {
  const std::size_t colon = hp.rfind(':');
  if (colon == std::string::npos) return false;
  *out = {};
  out->sin_family = AF_INET;
  const int port = std::atoi(hp.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return false;
  out->sin_port = htons(static_cast<std::uint16_t>(port));
  return ::inet_pton(AF_INET, hp.substr(0, colon).c_str(), &out->sin_addr) == 1;
}

// A non-blocking connect; fd -1 and `*outcome` set when it ended at once.
int start_connect(const sockaddr_in& a, std::string* outcome) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *outcome = outcome_of(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
    *outcome = "connected";
    ::close(fd);
    return -1;
  }
  if (errno != EINPROGRESS) {
    *outcome = outcome_of(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits until `fd` is connected or `deadline`; the outcome.
std::string finish_connect(int fd, Clock::time_point deadline) {
  pollfd p{fd, POLLOUT, 0};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (::poll(&p, 1, static_cast<int>(std::max<long long>(0, left))) <= 0) return "timeout";
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return outcome_of(err);
}

// CONNECT kPlannerProbeUnlisted through the proxy: "denied" on 403.
std::string through_proxy(const sockaddr_in& proxy, Clock::time_point deadline) {
  std::string outcome;
  const int fd = start_connect(proxy, &outcome);
  if (fd < 0) return "proxy " + outcome;
  outcome = finish_connect(fd, deadline);
  if (outcome != "connected") {
    ::close(fd);
    return "proxy " + outcome;
  }
  const std::string target = kPlannerProbeUnlisted;
  const std::string request = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
  std::string reply;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    while (reply.find("\r\n") == std::string::npos && reply.size() < 512) {
      pollfd p{fd, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(0, left))) <= 0) break;
      char buf[256];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  // "HTTP/1.1 403 Forbidden": the proxy refused the unlisted name. Anything
  // else (200, a 5xx after it tried the name) is a proxy that relays it.
  const std::size_t sp = reply.find(' ');
  const std::string code = sp == std::string::npos ? "" : reply.substr(sp + 1, 3);
  if (code == "403") return "denied";
  return code.empty() ? "timeout" : "connected";
}

}  // namespace

EgressReport probe_proxy_egress(const std::string& proxy, const std::vector<std::string>& targets) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::seconds(kEgressAttemptSeconds);
  EgressReport r;
  r.runner = "builtin";
  struct Pending {
    std::size_t attempt;
    int fd;
  };
  std::vector<Pending> pending;
  for (const auto& t : targets) {
    const std::size_t eq = t.find('=');
    const std::string label = eq == std::string::npos ? "target" : t.substr(0, eq);
    const std::string hp = eq == std::string::npos ? t : t.substr(eq + 1);
    sockaddr_in a{};
    if (!ipv4_endpoint(hp, &a)) continue;
    EgressAttempt attempt{label, "tcp", hp, ""};
    const int fd = start_connect(a, &attempt.outcome);
    r.attempts.push_back(attempt);
    if (fd >= 0) pending.push_back({r.attempts.size() - 1, fd});
  }
  for (const auto& p : pending) {
    r.attempts[p.attempt].outcome = finish_connect(p.fd, deadline);
    ::close(p.fd);
  }
  sockaddr_in pa{};
  EgressAttempt via{"proxy-unlisted", "connect", std::string(kPlannerProbeUnlisted) + " via " + proxy, ""};
  via.outcome = ipv4_endpoint(proxy, &pa) ? through_proxy(pa, Clock::now() + std::chrono::seconds(kEgressAttemptSeconds))
                                          : "error:no proxy address";
  r.attempts.push_back(via);
  r.finished = true;
  r.ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
  return r;
}

}  // namespace lazyagent
