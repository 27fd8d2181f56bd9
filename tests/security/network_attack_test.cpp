// Invariant 1: the sandbox has no network interface but `lo`; nothing it
// sends reaches a listener. Beyond attack_test.cpp's TCP/DNS probe: TCP and
// UDP to every address of this host (IPv4 and IPv6, the podman bridge's
// gateway included), DNS straight to the host's resolver, an abstract unix
// socket (they belong to the network namespace), podman's API socket, raw
// packet sockets. The control runs the same probe with the host's network
// namespace and podman's socket mounted, and must reach all of them.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "attack_common.h"

using nlohmann::json;
using namespace it;
using namespace sec;

namespace {

// Dual-stack TCP and UDP listeners on every address, plus an abstract unix
// socket; each counts what arrives.
class Listeners {
 public:
  Listeners() {
    tcp_ = bound(SOCK_STREAM, &tcp_port_);
    udp_ = bound(SOCK_DGRAM, &udp_port_);
    listen(tcp_, 64);
    abstract_name_ = "lazyagent-attack-" + std::to_string(getpid());
    unix_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, abstract_name_.data(), abstract_name_.size());
    bind(unix_, reinterpret_cast<sockaddr*>(&a),
         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name_.size()));
    listen(unix_, 16);
    thread_ = std::thread([this] { loop(); });
  }
  ~Listeners() {
    stop_ = true;
    thread_.join();
    close(tcp_);
    close(udp_);
    close(unix_);
  }
  int tcp_port() const { return tcp_port_; }
  int udp_port() const { return udp_port_; }
  const std::string& abstract_name() const { return abstract_name_; }
  int tcp() const { return tcp_n_; }
  int udp() const { return udp_n_; }
  int unix_conns() const { return unix_n_; }

 private:
  static int bound(int type, int* port) { return bind_every_address(type, port); }
  void loop() {
    while (!stop_) {
      pollfd fds[3] = {{tcp_, POLLIN, 0}, {udp_, POLLIN, 0}, {unix_, POLLIN, 0}};
      if (poll(fds, 3, 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int c = accept(tcp_, nullptr, nullptr);
        if (c >= 0) { ++tcp_n_; close(c); }
      }
      if (fds[1].revents & POLLIN) {
        char buf[512];
        if (recv(udp_, buf, sizeof buf, 0) >= 0) ++udp_n_;
      }
      if (fds[2].revents & POLLIN) {
        const int c = accept(unix_, nullptr, nullptr);
        if (c >= 0) { ++unix_n_; close(c); }
      }
    }
  }
  int tcp_ = -1, udp_ = -1, unix_ = -1, tcp_port_ = 0, udp_port_ = 0;
  std::string abstract_name_;
  std::atomic<bool> stop_{false};
  std::atomic<int> tcp_n_{0}, udp_n_{0}, unix_n_{0};
  std::thread thread_;
};

// Every IPv4 and global IPv6 address of this host (link-local needs a scope).
std::vector<std::string> host_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
      inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), buf) == out.end()) out.push_back(buf);
  }
  freeifaddrs(list);
  return out;
}

std::vector<std::string> host_nameservers() {
  std::vector<std::string> out;
  std::ifstream f("/etc/resolv.conf");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key, addr;
    if (in >> key >> addr && key == "nameserver") out.push_back(addr);
  }
  return out;
}

std::string py_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (const auto& x : v) s += "'" + x + "',";
  return s + "]";
}

std::string probe(const Listeners& l, const std::vector<std::string>& addrs) {
  return "import socket, os\n"
         "TARGETS = " + py_list(addrs) + " + ['host.containers.internal']\n"
         "NAMESERVERS = " + py_list(host_nameservers()) + " + ['10.88.0.1', '8.8.8.8', '2001:4860:4860::8888']\n"
         "print('IFACES=' + ','.join(sorted(os.listdir('/sys/class/net'))))\n"
         "def fam(h):\n"
         "    return socket.AF_INET6 if ':' in h else socket.AF_INET\n"
         "for h in TARGETS:\n"
         "    try:\n"
         "        socket.create_connection((h, " + std::to_string(l.tcp_port()) + "), timeout=2).close()\n"
         "        print('TCP CONNECTED ' + h)\n"
         "    except Exception as e:\n"
         "        print('TCP BLOCKED %s %s' % (h, type(e).__name__))\n"
         "    try:\n"
         "        ai = socket.getaddrinfo(h, " + std::to_string(l.udp_port()) + ", type=socket.SOCK_DGRAM)[0]\n"
         "        u = socket.socket(ai[0], socket.SOCK_DGRAM)\n"
         "        for _ in range(3): u.sendto(b'lazyagent-attack', ai[4])\n"
         "        u.close()\n"
         "        print('UDP SENT ' + h)\n"
         "    except Exception as e:\n"
         "        print('UDP BLOCKED %s %s' % (h, type(e).__name__))\n"
         "query = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x06debian\\x03org\\x00\\x00\\x01\\x00\\x01'\n"
         "for ns in NAMESERVERS:\n"
         "    try:\n"
         "        u = socket.socket(fam(ns), socket.SOCK_DGRAM); u.settimeout(2)\n"
         "        u.sendto(query, (ns, 53)); u.recv(512)\n"
         "        print('DNS ANSWERED ' + ns)\n"
         "    except Exception as e:\n"
         "        print('DNS BLOCKED %s %s' % (ns, type(e).__name__))\n"
         "try:\n"
         "    a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
         "    a.connect('\\0" + l.abstract_name() + "')\n"
         "    print('ABSTRACT CONNECTED')\n"
         "except Exception as e:\n"
         "    print('ABSTRACT BLOCKED ' + type(e).__name__)\n"
         "for p in ('/run/podman/podman.sock', '/var/run/podman/podman.sock', '/run/user/0/podman/podman.sock', '/var/run/docker.sock'):\n"
         "    try:\n"
         "        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.settimeout(2); c.connect(p)\n"
         "        c.sendall(b'GET /_ping HTTP/1.0\\r\\n\\r\\n')\n"
         "        print('PODMAN ANSWERED %s %s' % (p, c.recv(100).split(b'\\r\\n')[0].decode()))\n"
         "    except Exception as e:\n"
         "        print('PODMAN BLOCKED %s %s' % (p, type(e).__name__))\n"
         "try:\n"
         "    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
         "    print('RAW OPENED')\n"
         "except Exception as e:\n"
         "    print('RAW BLOCKED ' + type(e).__name__)\n"
         "routes = [l.split()[0] for l in open('/proc/net/route').read().splitlines()[1:]]\n"
         "print('ROUTES=' + ','.join(routes))\n";
}

}  // namespace

TEST_CASE("attack: TCP, UDP, IPv6, DNS, abstract and podman sockets from the sandbox", "[attack][network][quick]") {
  TempDir state;
  Listeners l;
  const auto addrs = host_addresses();
  REQUIRE(addrs.size() >= 2);  // at least lo's 127.0.0.1 and ::1
  json j = run_attack({state.path()}, probe(l, addrs));
  const std::string out = output(j);
  INFO(out);
  CHECK(has(out, "IFACES=lo\n"));
  CHECK_FALSE(has(out, "CONNECTED"));
  CHECK_FALSE(has(out, "ANSWERED"));
  CHECK(has(out, "RAW BLOCKED"));
  CHECK(has(out, "ROUTES=\n"));  // no route at all (lo has none in /proc/net/route)
  for (const auto& a : addrs) {
    if (a == "127.0.0.1" || a == "::1") continue;  // the sandbox's own lo accepts datagrams
    CHECK(has(out, "UDP BLOCKED " + a + " OSError"));
  }
  CHECK(has(out, "UDP BLOCKED host.containers.internal OSError"));
  CHECK(has(out, "ABSTRACT BLOCKED ConnectionRefusedError"));
  CHECK(has(out, "PODMAN BLOCKED /run/podman/podman.sock FileNotFoundError"));
  CHECK(l.tcp() == 0);
  CHECK(l.udp() == 0);
  CHECK(l.unix_conns() == 0);
  CHECK(j["tests_passed"] == true);
  evidence("targets: " + std::to_string(addrs.size()) + " host addresses + host.containers.internal; listener counts tcp=" +
           std::to_string(l.tcp()) + " udp=" + std::to_string(l.udp()) + " abstract=" + std::to_string(l.unix_conns()));
  evidence(lines_with(out, "IFACES") + "\n" + lines_with(out, "TCP") + "\n" + lines_with(out, "UDP") + "\n" +
           lines_with(out, "DNS") + "\n" + lines_with(out, "ABSTRACT") + "\n" + lines_with(out, "PODMAN") + "\n" +
           lines_with(out, "RAW"));
}

TEST_CASE("attack control: the same probe with the host's network and podman's socket reaches them", "[attack][network][control]") {
  Listeners l;
  const auto addrs = host_addresses();
  const std::string out = run_control("--network host -v /run/podman/podman.sock:/run/podman/podman.sock",
                                      probe(l, addrs));
  INFO(out);
  for (const auto& a : addrs) CHECK(has(out, "TCP CONNECTED " + a));
  CHECK(has(out, "ABSTRACT CONNECTED"));
  CHECK(has(out, "PODMAN ANSWERED /run/podman/podman.sock HTTP/1.0 200 OK"));
  usleep(200 * 1000);  // let the listener thread drain the datagrams
  CHECK(l.tcp() >= static_cast<int>(addrs.size()));
  CHECK(l.udp() >= static_cast<int>(addrs.size()));
  CHECK(l.unix_conns() >= 1);
  evidence("control (--network host, podman socket mounted): listener counts tcp=" + std::to_string(l.tcp()) +
           " udp=" + std::to_string(l.udp()) + " abstract=" + std::to_string(l.unix_conns()) + "\n" +
           lines_with(out, "TCP CONNECTED") + "\n" + lines_with(out, "ABSTRACT") + "\n" + lines_with(out, "PODMAN ANSWERED"));
}
