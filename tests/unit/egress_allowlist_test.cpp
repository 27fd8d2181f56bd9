// The egress allow-list (issue 31): its entries (contract/egress_entry.h),
// the config key environment.egress, the proxy's generated squid
// configuration and what its log says (policy/egress_proxy_config.h), and
// the client's create request (engine/podman/egress_proxy.h). The proxy
// itself runs against real podman in tests/security/egress_allowlist_test.cpp.
#include "contract/egress_entry.h"
#include "engine/podman/egress_proxy.h"
#include "engine/podman/environment.h"
#include "pipeline/run_result.h"
#include "policy/egress_proxy_config.h"
#include "policy/setup_egress_probe.h"

#include "catch_compat.h"
#include <nlohmann/json.hpp>

using namespace lazyagent;
using nlohmann::json;

TEST_CASE("egress entries: names, HOST:PORT, a leading *. only, and every other form refused with the reason") {
  CHECK(egress_entry_problem("mirror.example.net") == "");
  CHECK(egress_entry_problem("Registry.EXAMPLE.com:443") == "");
  CHECK(egress_entry_problem("*.pythonhosted.org") == "");
  CHECK(egress_entry_problem("localhost") == "");
  CHECK(egress_entry_problem("") == "an empty entry");
  CHECK(egress_entry_problem("*.org") == "'*.org' is too broad (a wildcard needs a domain of two labels at least)");
  CHECK(egress_entry_problem("a.*.org") == "a wildcard is allowed only as a leading '*.'");
  CHECK(egress_entry_problem("*example.org") == "a wildcard is allowed only as a leading '*.'");
  CHECK(egress_entry_problem("10.88.0.1") == "an IP address (list host names: the proxy decides by name)");
  CHECK(egress_entry_problem("10.88.0.1:22") == "an IP address (list host names: the proxy decides by name)");
  CHECK(egress_entry_problem("[::1]:80") == "an IP address (list host names: the proxy decides by name)");
  CHECK(egress_entry_problem("fe80::1") == "an IP address (list host names: the proxy decides by name)");
  CHECK(egress_entry_problem("example.org:0") == "the port '0' (a number from 1 to 65535)");
  CHECK(egress_entry_problem("example.org:65536") == "the port '65536' (a number from 1 to 65535)");
  CHECK(egress_entry_problem("example.org:") == "the port '' (a number from 1 to 65535)");
  CHECK(egress_entry_problem("http://example.org") == "a URL or a path (list the host name, optionally :PORT)");
  CHECK(egress_entry_problem("exa mple.org") == "the character ' ' (a host name has letters, digits, '-' and '.')");
  CHECK(egress_entry_problem("example.org\nhttp_access allow all") ==
        "the character '?' (a host name has letters, digits, '-' and '.')");
  CHECK(egress_entry_problem("-x.example.org") == "a label starting or ending with '-'");
  CHECK(egress_entry_problem("a..b") == "an empty label in 'a..b'");
  CHECK(egress_entry_problem(std::string(64, 'a') + ".org") == "a label longer than 63 characters");

  const EgressEntry e = parse_egress_entry("*.Example.ORG:8443");
  CHECK(e.host == "example.org");
  CHECK(e.wildcard);
  CHECK(e.port == 8443);
  CHECK(e.text() == "*.example.org:8443");
  CHECK(parse_egress_entry("mirror.example.net").ports() == std::vector<int>{80, 443});

  const std::vector<EgressEntry> list = {parse_egress_entry("mirror.example.net"), parse_egress_entry("*.example.org:8443")};
  CHECK(egress_allows(list, "mirror.example.net", 80));
  CHECK(egress_allows(list, "MIRROR.example.net", 443));
  CHECK_FALSE(egress_allows(list, "mirror.example.net", 22));
  CHECK_FALSE(egress_allows(list, "other.example.net", 80));
  CHECK(egress_allows(list, "a.b.example.org", 8443));
  CHECK(egress_allows(list, "example.org", 8443));
  CHECK_FALSE(egress_allows(list, "badexample.org", 8443));
  CHECK_FALSE(egress_allows(list, "a.example.org", 443));
}

TEST_CASE("environment.egress: parsed lower case into the key, needs the bridge, every bad entry named") {
  auto c = parse_config("environment:\n  setup: [\"apt-get update\"]\n  egress: [Mirror.Example.net, \"*.example.com:443\"]\n",
                        "cfg.yaml", "/srv/proj");
  REQUIRE(c.ok());
  CHECK(c->environment.egress == std::vector<std::string>{"mirror.example.net", "*.example.com:443"});

  auto bad = parse_config("environment:\n  setup: [\"true\"]\n  egress: [\"10.0.0.1\", \"*.org\", ok.example.org]\n",
                          "cfg.yaml", "/srv/proj");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "cfg.yaml: environment.egress[0]: '10.0.0.1': an IP address (list host names: the proxy decides by name)\n"
        "cfg.yaml: environment.egress[1]: '*.org': '*.org' is too broad (a wildcard needs a domain of two labels at least)");

  auto none = parse_config("environment:\n  setup: [\"true\"]\n  network: none\n  egress: [mirror.example.net]\n", "cfg.yaml",
                           "/srv/proj");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message ==
        "cfg.yaml: environment.egress: needs network: bridge (with network: none the set-up reaches nothing)");

  auto empty = parse_config("environment:\n  setup: [\"true\"]\n  egress: []\n", "cfg.yaml", "/srv/proj");
  REQUIRE_FALSE(empty.ok());

  // The list is in the key: another list, another image; none, the old key.
  EnvironmentConfig env = c->environment;
  const std::string with = environment_key(env, "base", "id", {});
  env.egress = {"mirror.example.net"};
  CHECK(environment_key(env, "base", "id", {}) != with);
  env.egress.clear();
  CHECK(environment_key(env, "base", "id", {}) != with);
  EnvironmentConfig plain;
  plain.setup = env.setup;
  CHECK(environment_key(env, "base", "id", {}) == environment_key(plain, "base", "id", {}));
}

TEST_CASE("squid configuration: clients from the subnet only, one rule per entry, nothing else allowed") {
  const std::string conf = squid_config({parse_egress_entry("mirror.example.net"), parse_egress_entry("*.example.org:8443")},
                                        "10.89.3.0/24");
  CHECK(conf.find("http_port 3128\n") != std::string::npos);
  CHECK(conf.find("acl lazyagent_client src 10.89.3.0/24\n") != std::string::npos);
  CHECK(conf.find("acl lazyagent_host_0 dstdomain -n mirror.example.net\nacl lazyagent_port_0 port 80 443\n") !=
        std::string::npos);
  CHECK(conf.find("acl lazyagent_host_1 dstdomain -n .example.org\nacl lazyagent_port_1 port 8443\n") !=
        std::string::npos);
  // The access rules, in order: foreign clients out, each entry, then nothing.
  const std::string rules = conf.substr(conf.find("http_access"));
  CHECK(rules ==
        "http_access deny !lazyagent_client\n"
        "http_access allow lazyagent_host_0 lazyagent_port_0 !lazyagent_local\n"
        "http_access allow lazyagent_host_1 lazyagent_port_1 !lazyagent_local\n"
        "http_access deny all\n");
  CHECK(conf.find("cache deny all\n") != std::string::npos);
  // An empty list allows nothing.
  const std::string none = squid_config({}, "10.89.3.0/24");
  CHECK(none.substr(none.find("http_access")) == "http_access deny !lazyagent_client\nhttp_access deny all\n");
  // The script checks the configuration before squid serves it.
  CHECK(egress_proxy_script().find("squid -k parse -f /etc/squid/lazyagent.conf") != std::string::npos);
  // Stopped, it prints the log only once squid has exited (every open
  // transaction logged): no follower that may lag behind a short set-up.
  CHECK(egress_proxy_script().find("trap 'kill -TERM $pid 2>/dev/null; wait $pid; cat \"$log\"; exit 0' TERM") !=
        std::string::npos);
  CHECK(egress_proxy_script().find("tail -n +1 -F") == std::string::npos);
}

TEST_CASE("squid's log: denials and reached hosts, once each, plain HTTP URLs kept, foreign lines ignored") {
  const std::string log =
      "lazyagent-egress-ready\n"
      "lazyagent-egress 1796450050.859 TCP_TUNNEL 200 CONNECT registry.example.com 443 registry.example.com:443\n"
      "lazyagent-egress 1796450050.860 TCP_DENIED 403 CONNECT example.com 443 example.com:443\n"
      "lazyagent-egress 1796450050.866 TCP_DENIED 403 GET example.com 80 http://example.com/\n"
      "lazyagent-egress 1796450050.908 TCP_MISS 200 GET mirror.example.net 80 http://mirror.example.net/debian/\n"
      "lazyagent-egress 1796450050.909 TCP_DENIED 403 CONNECT example.com 443 example.com:443\n"
      "lazyagent-egress 1796450051.000 TCP_MISS 503 GET mirror.example.net 80 http://mirror.example.net/down\n"
      "lazyagent-egress 1796450051.000 TCP_MISS\n"
      "2026/12/05 05:53:06| WARNING: something squid said\n"
      "lazyagent-egress 1796450052.000 TCP_DENIED 403 GET h\x1b[2Jx 80 http://h\x1b[2Jx/\n";
  const auto requests = parse_egress_log(log);
  REQUIRE(requests.size() == 7);
  CHECK(requests[0].method == "CONNECT");
  CHECK(requests[0].host_port() == "registry.example.com:443");
  CHECK(requests[0].time == Approx(1796450050.859));
  CHECK_FALSE(requests[0].denied());
  CHECK(requests[1].denied());
  CHECK(requests[6].host == "h?[2Jx");  // escape sequences never reach a terminal
  const EgressOutcome o = summarize_egress(requests);
  CHECK(o.denied == std::vector<std::string>{"example.com:443", "example.com:80", "h?[2Jx:80"});
  CHECK(o.reached == std::vector<std::string>{"registry.example.com:443", "mirror.example.net:80", "http://mirror.example.net/debian/"});

  CHECK(egress_denial_message({"registry.example.com:443"}, 3) ==
        "set-up step 3 was denied egress to registry.example.com:443: add it to environment.egress");
  CHECK(egress_denial_message({"a.example:443", "b.example:80"}, 0) ==
        "the set-up was denied egress to a.example:443, b.example:80: add them to environment.egress");
  CHECK(egress_denial_message({}, 2).empty());
}

TEST_CASE("a client behind the proxy: the internal network only, IPv6 off, no DNS, the proxy variables") {
  EnvironmentConfig env;
  env.setup = {"true"};
  json spec = setup_container_spec(env, "base", "name", {});
  attach_to_egress_network(&spec, "lazyagent-egress-x", "10.89.0.4");
  CHECK(spec["netns"] == json{{"nsmode", "bridge"}});
  CHECK(spec["networks"] == json{{"lazyagent-egress-x", json::object()}});
  CHECK(spec["dns_server"] == json{"127.0.0.1"});
  CHECK(spec["sysctl"]["net.ipv6.conf.all.disable_ipv6"] == "1");
  for (const char* k : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"}) CHECK(spec["env"][k] == "http://10.89.0.4:3128");
  CHECK(spec["env"]["no_proxy"] == "localhost,127.0.0.1,::1");
  CHECK(spec["env"]["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");

  // The environment's record says what was allowed, reached and refused.
  env.present = true;
  env.egress = {"mirror.example.net"};
  env.resolved.key = "k";
  env.resolved.egress_reached = {"mirror.example.net:80"};
  env.resolved.egress_denied = {"registry.example.com:443"};
  env.resolved.egress_reached_sha256 = "abc";
  const json j = environment_json(env);
  CHECK(j["egress"] == json{{"allowed", {"mirror.example.net"}},
                            {"reached", {"mirror.example.net:80"}},
                            {"reached_sha256", "abc"},
                            {"denied", {"registry.example.com:443"}},
                            {"probe", nullptr},
                            {"probe_attempts", json::array()}});
}

TEST_CASE("the set-up's egress probe: its lines read back, a way out named, a base without python3 stated") {
  const std::string shell = setup_egress_probe_shell({"mirror.example.net", "*.example.org:8443"}, {"10.88.0.1"});
  // The unlisted name it asks the proxy for is the one the tool leaves out of a step's denials.
  CHECK(std::string(kEgressProbeTarget) == "lazyagent-egress-probe.invalid:443");
  CHECK(shell.find("python3 -I -S -c ") != std::string::npos);
  CHECK(shell.find("'mirror.example.net *.example.org:8443' '10.88.0.1' 'lazyagent-egress-probe.invalid:443') || exit 86;") !=
        std::string::npos);
  const auto p = parse_setup_egress_probe(
      "::lazyagent-egress-probe proxy-unlisted 403::\n"
      "::lazyagent-egress-probe direct:10.88.0.1:22 refused way-out::\n"
      "::lazyagent-egress-probe direct:10.88.0.1:53 blocked:101::\n"
      "::lazyagent-egress-probe dns:mirror.example.net failed::\n"
      "a step's own line\n"
      "::lazyagent-egress-probe done 4::\n");
  CHECK(p.ran);
  CHECK(p.attempts.size() == 4);
  CHECK(p.ways_out == std::vector<std::string>{"direct:10.88.0.1:22 refused"});
  CHECK(p.to_json()["enforced"] == false);
  const auto clean = parse_setup_egress_probe("::lazyagent-egress-probe proxy-unlisted 403::\n::lazyagent-egress-probe done 1::\n");
  CHECK(clean.to_json()["enforced"] == true);
  const auto none = parse_setup_egress_probe("::lazyagent-egress-probe runner none::\n::lazyagent-egress-probe done 0::\n");
  CHECK(none.runner == "none");
  CHECK(none.to_json()["enforced"] == false);
  CHECK_FALSE(parse_setup_egress_probe("::lazyagent-egress-probe proxy-unlisted 403::\n").ran);
}
