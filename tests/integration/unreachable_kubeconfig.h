// A kubeconfig naming an API server at a port nothing listens on (127.0.0.1:1):
// for tests of what the CLI does when the cluster is away.
#pragma once
#include <string>

#include "harness.h"

namespace it {

inline std::string unreachable_kubeconfig(TempDir& dir) {
  return dir.file("kubeconfig", R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: none}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
}

}  // namespace it
