// What the tests on the local cluster's registry share
// (scripts/k8s-registry.sh; k8s_registry_test.cpp, k8s_environment_test.cpp):
// its address, a client of it and of the cluster, a run's leftovers, and a
// recorder of the sandbox Jobs as the API server stored them.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/kubeconfig.h"
#include "engine/k8s/oci_registry.h"
#include "policy/sandbox_policy.h"

namespace k8sreg {

using nlohmann::json;
using it::sh;
using namespace lazyagent;

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline std::string reg_kubeconfig() {
  if (const char* k = std::getenv("KUBECONFIG"); k && *k) return k;
  return trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-cluster.sh status 2>/dev/null"));
}

inline std::string registry_address() {
  const std::string a = trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh status 2>/dev/null"));
  REQUIRE_FALSE(a.empty());
  return a;
}

inline std::string registry_state() {
  const char* s = std::getenv("LAZYAGENT_K8S_REGISTRY_STATE");
  return s && *s ? s : "/var/lib/lazyagent-oci/k8s-registry";
}

inline RegistryClient registry() {
  RegistryConnection c;
  c.address = registry_address();
  c.plain_http = true;
  return RegistryClient(c);
}

inline K8sClient reg_client() {
  auto c = load_kubeconfig(reg_kubeconfig());
  REQUIRE(c.ok());
  return K8sClient(*c);
}

inline std::size_t run_leftovers(K8sClient& k, const std::string& run_id) {
  std::size_t n = 0;
  for (const K8sKind* kind : {&kK8sJobs, &kK8sPods, &kK8sConfigMaps, &kK8sNetworkPolicies}) {
    auto l = k.list(*kind, "default", std::string(kLabelRun) + "=" + run_id);
    REQUIRE(l.ok());
    n += l->value("items", json::array()).size();
  }
  return n;
}

// Every Job of the sandbox role seen while it lives (a watch in a thread).
class JobRecorder {
 public:
  JobRecorder() : st_(std::make_shared<State>()) {
    auto st = st_;
    const std::string kc = reg_kubeconfig();
    std::thread([st, kc] {
      auto c = load_kubeconfig(kc);
      if (!c) return;
      K8sClient k(*c);
      K8sListQuery q;
      q.label_selector = "io.lazyagent.role=sandbox";
      (void)k.watch_until(kK8sJobs, "default", q,
                          [st](const std::string&, const json& obj) {
                            std::lock_guard<std::mutex> l(st->mu);
                            st->seen.push_back(obj);
                            return st->stop.load();
                          },
                          900000);
    }).detach();
  }
  ~JobRecorder() { st_->stop = true; }
  std::vector<json> stop() {
    st_->stop = true;
    std::lock_guard<std::mutex> l(st_->mu);
    return st_->seen;
  }

 private:
  struct State {
    std::mutex mu;
    std::vector<json> seen;
    std::atomic<bool> stop{false};
  };
  std::shared_ptr<State> st_;
};

}  // namespace k8sreg
