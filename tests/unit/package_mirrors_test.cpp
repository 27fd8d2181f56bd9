#include "catch_compat.h"

#include <filesystem>
#include <fstream>

#include "unit_tmp.h"
#include "util/package_mirrors.h"

using namespace lazyagent;

TEST_CASE("package mirrors: hosts of one-line and deb822 apt sources, disabled and commented ones skipped") {
  CHECK(hosts_in_apt_sources("# deb http://old.example/debian bookworm main\n"
                             "deb [arch=amd64 signed-by=/k.gpg] http://mirror.one/debian bookworm main\n"
                             "deb-src https://user@mirror.two:8080/debian bookworm main\n"
                             "deb file:/srv/local ./\n"
                             "deb http://mirror.one/debian-security bookworm-security main\n",
                             false) == std::vector<std::string>{"mirror.one", "mirror.two"});
  CHECK(hosts_in_apt_sources("Types: deb\n# http://commented.example/x\nURIs: http://deb.three/debian\n"
                             "Suites: bookworm\n\nTypes: deb\nURIs: https://off.example/x\nEnabled: no\n\n"
                             "Types: deb deb-src\nURIs: http://[2001:db8::1]/debian http://deb.three/security\n",
                             true) == std::vector<std::string>{"deb.three", "2001:db8::1"});
}

TEST_CASE("package mirrors: the files of an apt directory in order, .list and .sources only") {
  Tmp t;
  std::filesystem::create_directories(t.path + "/sources.list.d");
  std::ofstream(t.path + "/sources.list") << "deb http://first.mirror/debian bookworm main\n";
  std::ofstream(t.path + "/sources.list.d/b.sources") << "Types: deb\nURIs: http://second.mirror/debian\n";
  std::ofstream(t.path + "/sources.list.d/a.list.disabled") << "deb http://never.mirror/debian bookworm main\n";
  std::ofstream(t.path + "/sources.list.d/c.list") << "deb http://first.mirror/other bookworm main\n";
  CHECK(apt_source_hosts(t.path) == std::vector<std::string>{"first.mirror", "second.mirror"});
  CHECK(package_mirror_probe_targets(t.path + "/missing").empty());
}

TEST_CASE("host probe targets: this machine's own IPv4 addresses on 22, 80 and 443, never loopback") {
  const auto targets = host_probe_targets();
  REQUIRE_FALSE(targets.empty());  // the build machine has an address besides lo
  CHECK(targets.size() % 3 == 0);
  for (const auto& t : targets) {
    INFO(t);
    CHECK(t.rfind("host=", 0) == 0);
    CHECK(t.rfind("host=127.", 0) != 0);
    const std::string port = t.substr(t.rfind(':') + 1);
    CHECK((port == "22" || port == "80" || port == "443"));
  }
}
