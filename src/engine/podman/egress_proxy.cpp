#include "engine/podman/egress_proxy.h"

#include <chrono>
#include <thread>

#include "engine/podman/log_stream.h"
#include "engine/podman/podman_client.h"
#include "util/http_transfer.h"
#include "util/tar_writer.h"

namespace lazyagent {
namespace {

using nlohmann::json;

constexpr std::size_t kProxyLogBytes = 4u << 20;

Result<json> parse_reply(const Result<HttpResponse>& r, const std::string& what) {
  if (!r) return r.error().context(what);
  if (r->status < 200 || r->status >= 300) return podman_status_error(what, r->status, r->body);
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return engine_error(what + ": podman's reply is not JSON");
  return j;
}

}  // namespace

std::map<std::string, std::string> egress_proxy_env(const std::string& address) {
  const std::string url = "http://" + address + ":" + std::to_string(kEgressProxyPort);
  // no_proxy: only loopback; every other name goes through the proxy.
  return {{"http_proxy", url},  {"https_proxy", url},  {"HTTP_PROXY", url},
          {"HTTPS_PROXY", url}, {"no_proxy", "localhost,127.0.0.1,::1"}, {"NO_PROXY", "localhost,127.0.0.1,::1"}};
}

void attach_to_egress_network(json* spec, const std::string& network, const std::string& proxy_address) {
  (*spec)["netns"] = {{"nsmode", "bridge"}};
  (*spec)["networks"] = {{network, json::object()}};
  (*spec)["dns_server"] = {"127.0.0.1"};
  (*spec)["sysctl"] = {{"net.ipv6.conf.all.disable_ipv6", "1"}, {"net.ipv6.conf.default.disable_ipv6", "1"}};
  for (const auto& [k, v] : egress_proxy_env(proxy_address)) (*spec)["env"][k] = v;
}

Result<std::unique_ptr<EgressProxy>> EgressProxy::start(PodmanClient& podman, const std::vector<EgressEntry>& entries,
                                                        const std::string& name, const std::string& image,
                                                        const std::map<std::string, std::string>& labels) {
  std::unique_ptr<EgressProxy> p(new EgressProxy(podman));
  const std::string what = "egress proxy";
  // 1. The internal network.
  const json net = {{"name", name}, {"internal", true}, {"dns_enabled", false}, {"labels", labels}};
  auto created = parse_reply(podman.call("POST", "/networks/create", net.dump()), what + ": creating network " + name);
  if (!created) return created.error();
  p->network_ = name;
  std::string subnet;
  if (created->contains("subnets") && (*created)["subnets"].is_array() && !(*created)["subnets"].empty())
    subnet = (*created)["subnets"][0].value("subnet", "");
  if (subnet.empty()) return engine_error(what + ": podman gave network " + name + " no subnet");
  if (!created->value("internal", false))
    return engine_error(what + ": podman did not make network " + name + " internal");

  // 2. The proxy container: the default bridge (its way out) and the network.
  // host.containers.internal must name this machine on the default bridge:
  // podman otherwise points it at the internal network's gateway, which has
  // no address on the host (measured: squid answered 503 for a planner's
  // provider there).
  json hostadd = json::array();
  if (auto r = podman.call("GET", "/networks/podman/json"); r && r->status == 200) {
    const json j = json::parse(r->body, nullptr, false);
    if (j.is_object() && j.contains("subnets") && j["subnets"].is_array() && !j["subnets"].empty() &&
        j["subnets"][0].is_object()) {
      const std::string gw = j["subnets"][0].value("gateway", "");
      if (!gw.empty()) hostadd.push_back("host.containers.internal:" + gw);
    }
  }
  const json spec = {
      {"hostadd", hostadd},
      {"image", image},
      {"name", name + "-proxy"},
      {"labels", labels},
      {"command", {"/bin/sh", "-c", egress_proxy_script()}},
      {"env", {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}},
      {"netns", {{"nsmode", "bridge"}}},
      {"networks", {{"podman", json::object()}, {name, json::object()}}},
      {"sysctl", {{"net.ipv4.ip_forward", "0"}, {"net.ipv6.conf.all.forwarding", "0"}}},
      {"cap_drop", {"CAP_SYS_CHROOT", "CAP_SETFCAP", "CAP_MKNOD", "CAP_NET_RAW", "CAP_AUDIT_WRITE", "CAP_SETPCAP",
                    "CAP_NET_BIND_SERVICE", "CAP_FSETID"}},
      {"no_new_privileges", true},
      {"r_limits", {{{"type", "nofile"}, {"soft", 4096}, {"hard", 4096}}, {{"type", "nproc"}, {"soft", 512}, {"hard", 512}}}},
      {"resource_limits", {{"pids", {{"limit", 512}}}, {"memory", {{"limit", 256LL << 20}}}}},
      {"log_configuration", {{"driver", "k8s-file"}}},
      {"stop_timeout", 1},
  };
  auto box = podman.create(spec);
  if (!box) {
    // The usual cause, asked only now (no call on the way that works): the
    // image was never built. That is a set-up fact, named with its command.
    if (auto r = podman.call("GET", "/images/" + url_escape(image) + "/json"); r && r->status == 404) {
      return usage_error(what + ": its image " + image + " is not on this podman service: build it with " +
                         "`lazyagent-oci images build --only egress-proxy` (scripts/setup.sh and scripts/demo.sh build it)");
    }
    return box.error().context(what + ": creating the proxy container from " + image);
  }
  p->container_ = box->id;
  auto tar = write_tar({{std::string(kEgressProxyConfigPath).substr(1), squid_config(entries, subnet), 0644, false}});
  if (!tar) return tar.error().context(what);
  if (auto st = podman.put_archive(p->container_, "/", *tar); !st) return st.error().context(what + ": its configuration");
  if (auto st = podman.start(p->container_); !st) return st.error().context(what + ": starting it");

  // 3. Ready: the script prints kEgressReadyLine once squid listens, or exits.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (true) {
    auto raw = podman.logs(p->container_, 64 * 1024);
    if (!raw) return raw.error().context(what);
    const DemuxedLogs logs = demux_logs(raw->body, 64 * 1024);
    if (logs.combined.find(kEgressReadyLine) != std::string::npos) break;
    auto info = podman.inspect(p->container_);
    if (!info) return info.error().context(what);
    const bool running = info->contains("State") && (*info)["State"].value("Running", false);
    if (!running) {
      std::string said = logs.combined.substr(0, 4000);
      return engine_error(what + ": squid refused its configuration or did not start:\n" + said);
    }
    if (std::chrono::steady_clock::now() > deadline)
      return engine_error(what + ": squid did not listen within 20 s:\n" + logs.combined.substr(0, 4000));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto info = podman.inspect(p->container_);
  if (!info) return info.error().context(what);
  const json nets = (*info)["NetworkSettings"].value("Networks", json::object());
  if (nets.contains(name)) p->address_ = nets[name].value("IPAddress", "");
  if (p->address_.empty()) return engine_error(what + ": the proxy has no address on network " + name);
  return p;
}

Result<std::vector<EgressRequest>> EgressProxy::requests() {
  // Stop first, then read: squid logs a transaction when it ends, and the
  // script prints the log only after squid has shut down (egress_proxy_script()),
  // so nothing the client did is still on its way. A proxy that already
  // exited refuses the signal; its script printed the log on the way out.
  (void)podman_.kill(container_, "SIGTERM");
  auto stopped = podman_.wait(container_, 15000);
  if (!stopped) return stopped.error().context("egress proxy: waiting for squid to stop and write its log");
  auto raw = podman_.logs(container_, kProxyLogBytes);
  if (!raw) return raw.error().context("egress proxy: reading its log");
  return parse_egress_log(demux_logs(raw->body, kProxyLogBytes).out);
}

Status EgressProxy::remove() {
  Status out = ok_status();
  if (!container_.empty()) {
    if (auto st = podman_.remove(container_); !st) out = st;
    else container_.clear();
  }
  if (!network_.empty()) {
    if (auto st = podman_.remove_network(network_); !st) return st.error().context("egress proxy");
    network_.clear();
  }
  return out;
}

EgressProxy::~EgressProxy() { (void)remove(); }

}  // namespace lazyagent
