// What the tests on the local cluster's registry share
// (scripts/k8s-registry.sh; k8s_registry_test.cpp, k8s_environment_test.cpp),
// on top of the cluster's fixtures (k8s_fixtures.h): a client of the registry
// and of the cluster, a run's leftovers, and a recorder of the sandbox Jobs as
// the API server stored them.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "k8s_fixtures.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/kubeconfig.h"
#include "engine/k8s/oci_registry.h"
#include "policy/sandbox_policy.h"

namespace k8sreg {

using nlohmann::json;
using it::registry_address;
using it::sh;
using namespace lazyagent;

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline std::string reg_kubeconfig() { return it::kubeconfig(); }

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

// Every Job of the sandbox role seen while it lives.
struct JobRecorder : it::Recorder {
  JobRecorder() : Recorder(kK8sJobs, "io.lazyagent.role=sandbox") {}
};

}  // namespace k8sreg
