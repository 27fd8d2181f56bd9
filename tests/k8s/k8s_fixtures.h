// The k8s tests' scripted provider (tests/k8s/): the project's provider stub
// listening where the cluster's pods reach this host, the provider Secret in
// the cluster (made by `configure --backend k8s`, deleted at the end), a
// config. Needs KUBECONFIG (or the local cluster's kubeconfig, found through
// `scripts/k8s-cluster.sh status`) and LAZYAGENT_K8S_HOST_IP (default
// 10.244.91.1: the local cluster's bridge gateway, where pods reach this host).
#pragma once

#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/kubeconfig.h"
#include "provider/provider_stub.h"

namespace it {

using nlohmann::json;
using namespace lazyagent;

inline const std::string kKey = "sk-lazyagent-k8s-it-KEY-0a1b2c3d4e5f";
inline const std::string kNs = "default";

inline std::string kubeconfig() {
  static const std::string path = [] {
    if (const char* k = std::getenv("KUBECONFIG"); k && *k) return std::string(k);
    std::string out = sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-cluster.sh status 2>/dev/null");
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }();
  return path;
}

inline std::string host_ip() {
  const char* ip = std::getenv("LAZYAGENT_K8S_HOST_IP");
  return ip && *ip ? ip : "10.244.91.1";
}

// The local registry's HOST:PORT (scripts/k8s-registry.sh, started with the cluster).
inline std::string registry_address() {
  std::string a = sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh status 2>/dev/null");
  while (!a.empty() && (a.back() == '\n' || a.back() == ' ')) a.pop_back();
  REQUIRE_FALSE(a.empty());
  return a;
}

inline K8sClient client() {
  auto c = load_kubeconfig(kubeconfig());
  REQUIRE(c.ok());
  return K8sClient(*c);
}

// The scripted provider (listening where pods reach this host), the
// provider Secret in the cluster (made by `configure --backend k8s`), a config.
class Provider {
 public:
  // `kubeconfig_path`: the CLI's kubeconfig ("" = the local cluster's admin one).
  explicit Provider(std::vector<StubReply> replies, const std::string& extra_yaml = "",
                    const std::string& seed = seed_dir(), const std::string& kubeconfig_path = "")
      : stub_(StubScript{kKey, std::move(replies)}), kc_(kubeconfig_path.empty() ? kubeconfig() : kubeconfig_path) {
    auto port = stub_.listen("0.0.0.0", 0);
    REQUIRE(port.ok());
    secret_ = "lazyagent-it-provider-" + std::to_string(getpid());
    // "%PROVIDER%" in extra_yaml: the provider's ADDR:PORT as pods reach it.
    std::string extra = extra_yaml;
    provider_ = host_ip() + ":" + std::to_string(*port);
    for (auto at = extra.find("%PROVIDER%"); at != std::string::npos; at = extra.find("%PROVIDER%")) {
      extra.replace(at, 10, provider_);
    }
    // A planner image of one's own (COMMON: never retag :latest), imported into the cluster's containerd.
    const char* planner = std::getenv("LAZYAGENT_IT_PLANNER_IMAGE");
    config_ = dir_.file("config.yaml", "seed: " + seed + "\nprovider:\n  max_retries: 1\n" +
                                           "k8s:\n  secret: " + secret_ + "\n  plain_http_provider_ip: " + host_ip() +
                                           "\n" + extra +
                                           (planner && *planner ? "images:\n  planner: " + std::string(planner) + "\n"
                                                                : std::string()));
    url_ = "http://host.containers.internal:" + std::to_string(*port) + "/v1";
    CliResult r = run_cli(env({{"CODING_AGENT_BASE_URL", url_}, {"CODING_AGENT_MODEL", "stub"},
                               {"CODING_AGENT_API_KEY", kKey}}),
                          {"configure", "--backend", "k8s", "--config", config_, "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find(kKey) == std::string::npos);
    CHECK(r.err.find(kKey) == std::string::npos);
    CHECK(json::parse(r.out)["plain_http_provider"].get<std::string>().find(host_ip()) != std::string::npos);
  }
  ~Provider() {
    K8sClient k = client();
    (void)k.remove(kK8sSecrets, kNs, secret_);
    stub_.stop();
  }
  CliEnv env(std::map<std::string, std::string> extra = {}) {
    extra["KUBECONFIG"] = kc_;
    return CliEnv{state_.path(), extra};
  }
  CliResult run(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"run", "--backend", "k8s", "--config", config_, "--json", "--timeout", "60"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(env(), args, 400);
  }
  CliResult cli(const std::vector<std::string>& args) { return run_cli(env(), args); }
  const std::string& config() const { return config_; }
  const std::string& provider_address() const { return provider_; }
  ProviderStub& stub() { return stub_; }

 private:
  ProviderStub stub_;
  std::string kc_;
  TempDir dir_, state_;
  std::string config_, url_, secret_, provider_;
};

inline std::size_t count_with(K8sClient& k, const K8sKind& kind, const std::string& selector) {
  auto l = k.list(kind, kNs, selector);
  REQUIRE(l.ok());
  return l->value("items", json::array()).size();
}

inline std::size_t leftovers(K8sClient& k, const std::string& selector) {
  return count_with(k, kK8sJobs, selector) + count_with(k, kK8sPods, selector) +
         count_with(k, kK8sConfigMaps, selector) + count_with(k, kK8sNetworkPolicies, selector);
}

// Records every object of `kind` matching `selector` seen while it lives
// (a watch in a detached thread; its state is shared, so it may outlive us).
// The constructor lists first and the watch starts from that list's
// resourceVersion, so nothing made after the constructor returns is missed,
// however late the thread gets to the API server (watch_until resumes a
// watch the server ends from the last version seen).
class Recorder {
 public:
  Recorder(const K8sKind& kind, std::string selector) : st_(std::make_shared<State>()) {
    auto c = load_kubeconfig(kubeconfig());
    REQUIRE(c.ok());
    K8sClient k(*c);
    auto listed = k.list(kind, kNs, selector);
    REQUIRE(listed.ok());
    std::string version = listed->value("/metadata/resourceVersion"_json_pointer, std::string());
    REQUIRE_FALSE(version.empty());
    auto st = st_;
    std::thread([st, &kind, selector, conn = *c, version] {
      K8sClient w(conn);
      K8sListQuery q;
      q.label_selector = selector;
      q.resource_version = version;  // from the list above: the watch misses nothing made since
      (void)w.watch_until(kind, kNs, q,
                          [st](const std::string&, const json& obj) {
                            std::lock_guard<std::mutex> l(st->mu);
                            st->seen.push_back(obj);
                            return st->stop.load();
                          },
                          900000);
    }).detach();
  }
  std::vector<json> stop() {
    st_->stop = true;
    std::lock_guard<std::mutex> l(st_->mu);
    return st_->seen;
  }
  ~Recorder() { st_->stop = true; }

 private:
  struct State {
    std::mutex mu;
    std::vector<json> seen;
    std::atomic<bool> stop{false};
  };
  std::shared_ptr<State> st_;
};

}  // namespace it
