// provider.network: allowlist on podman (issue 31 item 4): the planner
// container reaches the provider's HOST:PORT through the allow-list proxy
// and nothing else. Against the real podman service, the real planner image
// of this build ($LAZYAGENT_IT_PLANNER_IMAGE), the real proxy image and the
// scripted provider (a real HTTP server on this machine, harness.h).
//
// Targets: only this machine's own addresses (the provider on every
// address, the podman gateway, the host's addresses on 22/80/443).
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;

namespace {

const std::string kKey = "sk-lazyagent-allowlist-key-0123456789";

lazyagent::StubScript fixing_script() {
  lazyagent::StubScript s;
  s.api_key = kKey;
  lazyagent::StubReply r;
  r.content = json::parse(fixing_patch()).dump();
  s.replies = {r};
  return s;
}

std::string egress_leftovers() {
  return sh("podman network ls --format '{{.Name}}' | grep '^lazyagent-egress-'; "
            "podman ps -a --filter label=io.lazyagent.role=egress-proxy --format '{{.Names}}'; "
            "podman ps -a --filter label=io.lazyagent.role=planner --format '{{.Names}}'");
}

std::string port_of(const std::string& url) {
  const std::size_t colon = url.rfind(':');
  return url.substr(colon + 1, url.find('/', colon) - colon - 1);
}

}  // namespace

TEST_CASE("planner allowlist: the provider works through the proxy, the planner's probe finds nothing else, "
          "nothing left behind",
          "[planner-allowlist]") {
  PodmanProvider p(fixing_script(), kKey, 0, "  network: allowlist\n");
  const std::string port = port_of(p.url());
  const CliResult r = p.run();
  INFO(r.err);
  const json j = json_out(r);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(p.stub().request_log().size() == 1);  // the provider's one request came, through the proxy
  const json pe = j["planner"].value("planner_egress", json::object());
  INFO(pe.dump());
  CHECK(pe["state"] == "enforced");
  CHECK(pe["runner"] == "builtin");
  CHECK(pe["allowed"] == json{"host.containers.internal:" + port});
  CHECK(pe["findings"].empty());
  CHECK(pe["reached"].empty());
  const std::string attempts = pe["attempts"].dump();
  // The proxy refused an unlisted name; the podman gateway (this machine,
  // where the provider listens) is unreachable directly, on the provider's
  // port too: the provider is reached through the proxy only.
  CHECK(attempts.find("\"address\":\"lazyagent-egress-probe.invalid:443 via ") != std::string::npos);
  CHECK(attempts.find("\"outcome\":\"denied\"") != std::string::npos);
  CHECK(attempts.find("{\"address\":\"10.88.0.1:" + port + "\",\"outcome\":\"unreachable\"") != std::string::npos);
  CHECK(attempts.find("{\"address\":\"10.88.0.1:22\",\"outcome\":\"unreachable\"") != std::string::npos);
  CHECK(attempts.find("\"outcome\":\"connected\"") == std::string::npos);
  CHECK(attempts.find("\"outcome\":\"refused\"") == std::string::npos);
  CHECK(egress_leftovers().empty());
}

TEST_CASE("planner allowlist: the planner's probe finds a way out on the bridge and refuses to call the provider "
          "(positive control)",
          "[planner-allowlist][quick]") {
  // The same probe, in the planner image, on the default bridge: this
  // machine's listener is reachable directly, so it is not enforced and the
  // planner stops before reading its secrets (exit 4).
  lazyagent::ProviderStub stub(fixing_script());
  auto port = stub.listen("0.0.0.0", 0);
  REQUIRE(port.ok());
  const std::string out =
      sh("podman run --rm --network bridge " + planner_image() +
         " plan --egress-proxy 10.88.0.1:1 --egress-targets 'host=10.88.0.1:" + std::to_string(*port) +
         "' --egress-allow host.containers.internal:" + std::to_string(*port) + " --egress-required 2>&1; echo exit=$?");
  INFO(out);
  CHECK(out.find("planner_egress: not enforced: reached host tcp 10.88.0.1:" + std::to_string(*port) + " (connected)") !=
        std::string::npos);
  CHECK(out.find("provider.network: allowlist: the planner container's egress is not limited to the proxy") !=
        std::string::npos);
  CHECK(out.find("exit=4") != std::string::npos);
  CHECK(stub.request_log().empty());
  stub.stop();
}

TEST_CASE("planner allowlist: a base URL secret without the provider's HOST:PORT says to run configure again",
          "[planner-allowlist][quick]") {
  PodmanProvider p(fixing_script(), kKey, 0, "  network: allowlist\n");
  // An older configure stored the secret without the label.
  const std::string name = sh("grep -o 'base_url: [A-Z0-9_]*' " + p.config() + " | cut -d' ' -f2 | tr -d '\\n'");
  REQUIRE(!name.empty());
  sh("podman secret rm " + name + " >/dev/null && printf '%s' '" + p.url() + "' | podman secret create " + name +
     " - >/dev/null");
  const CliResult r = p.run();
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(json_out(r)["error"].get<std::string>().find(
            "provider.network: allowlist: podman secret " + name +
            " does not say which HOST:PORT the provider is on (stored by an older `configure`): run `lazyagent-oci "
            "configure` again, or set provider.network: bridge") != std::string::npos);
  CHECK(p.stub().request_log().empty());
  CHECK(egress_leftovers().empty());
}
