// provider.network: allowlist (issue 31 item 4): the provider's HOST:PORT
// from its URL (provider/planner_base_url.h), the config key, and the
// planner's own egress probe (provider/proxy_egress_probe.h) against real
// sockets on loopback: a stand-in proxy that refuses or relays, a listener
// that is reached, a closed port that answers. The planner container on
// podman: tests/security/planner_allowlist_test.cpp.
#include "config.h"
#include "policy/planner_egress.h"
#include "provider/planner_base_url.h"
#include "provider/proxy_egress_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "catch_compat.h"

using namespace lazyagent;

namespace {

// A loopback listener that answers each connection's first request with
// `reply` (empty: closes at once), serving `count` connections.
class Answering {
 public:
  Answering(std::string reply, int count) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 8);
    thread_ = std::thread([this, count] {
      for (int i = 0; i < count; ++i) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        if (!reply_.empty()) {
          char buf[512];
          (void)::recv(c, buf, sizeof buf, 0);
          (void)::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
        }
        ::close(c);
      }
    });
  }
  ~Answering() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::string reply_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A loopback port nothing listens on (bound, never listened, closed).
std::string closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

std::string outcome(const EgressReport& r, const std::string& target) {
  for (const auto& a : r.attempts) {
    if (a.target == target) return a.outcome;
  }
  return "(none)";
}

}  // namespace

TEST_CASE("provider origin: HOST:PORT of the base URL, the port from the scheme, lower case, no path or user") {
  CHECK(provider_origin("https://API.Provider.example/v1") == "api.provider.example:443");
  CHECK(provider_origin("http://host.containers.internal:18080/v1") == "host.containers.internal:18080");
  CHECK(provider_origin("http://host.containers.internal/v1?x=1") == "host.containers.internal:80");
  CHECK(provider_origin("HTTPS://user:pw@provider.example:8443") == "provider.example:8443");
  CHECK(provider_origin("https://[2001:db8::1]:8443/v1") == "[2001:db8::1]:8443");
  CHECK(provider_origin("ftp://provider.example/") == "");
  CHECK(provider_origin("https:///v1") == "");
}

TEST_CASE("provider.network: allowlist is a planner network, anything else is named") {
  auto ok = parse_config("provider:\n  network: allowlist\n", "c.yaml", "/tmp");
  REQUIRE(ok.ok());
  CHECK(ok->provider.network == "allowlist");
  auto bad = parse_config("provider:\n  network: proxy\n", "c.yaml", "/tmp");
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("provider.network: expected 'bridge', 'allowlist', 'host' or 'none'") !=
        std::string::npos);
}

TEST_CASE("the planner's egress probe: a refusing proxy and no route is enforced, a reached host or a relaying "
          "proxy is not") {
  SECTION("the proxy refuses the unlisted name, the target is not reached") {
    Answering proxy("HTTP/1.1 403 Forbidden\r\n\r\n", 1);
    const EgressReport r = probe_proxy_egress(proxy.address(), {});
    CHECK(r.finished);
    CHECK(r.runner == "builtin");
    CHECK(outcome(r, "proxy-unlisted") == "denied");
    CHECK(judge_planner_egress(r, {}).enforced);
  }
  SECTION("a listener reached directly, a closed port answering: both named") {
    Answering proxy("HTTP/1.1 403 Forbidden\r\n\r\n", 1);
    Answering host("", 1);
    const std::string closed = closed_port();
    const EgressReport r = probe_proxy_egress(proxy.address(), {"host=" + host.address(), "gateway=" + closed});
    CHECK(outcome(r, "host") == "connected");
    CHECK(outcome(r, "gateway") == "refused");
    const PlannerEgressVerdict v = judge_planner_egress(r, {});
    CHECK(!v.enforced);
    CHECK(v.findings == std::vector<std::string>{"reached host tcp " + host.address() + " (connected)",
                                                 "reached gateway tcp " + closed + " (refused)"});
  }
  SECTION("a proxy that relays the unlisted name") {
    Answering proxy("HTTP/1.1 200 Connection established\r\n\r\n", 1);
    const EgressReport r = probe_proxy_egress(proxy.address(), {});
    CHECK(outcome(r, "proxy-unlisted") == "connected");
    CHECK(!judge_planner_egress(r, {}).enforced);
  }
  SECTION("no proxy listening: not a way out, but not shown refusing either") {
    const EgressReport r = probe_proxy_egress(closed_port(), {"host=not-an-address:1"});
    CHECK(outcome(r, "proxy-unlisted") == "proxy refused");
    CHECK(r.attempts.size() == 1);  // a target that is not ADDR:PORT is skipped
  }
}
