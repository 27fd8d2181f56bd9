// Where a Kubernetes API server is and how to authenticate to it.
//
// Two sources, like kubectl and client-go:
//   - a kubeconfig file: the current context (or a named one) selects a
//     cluster (server, certificate-authority[-data], insecure-skip-tls-verify)
//     and a user (token, tokenFile, client-certificate[-data] +
//     client-key[-data]); relative file paths resolve against the
//     kubeconfig's directory; the context's namespace is the default one.
//     exec/auth-provider plugins are refused with a clear error (we do not
//     run other programs to get credentials).
//   - in-cluster: KUBERNETES_SERVICE_HOST/PORT and the service account's
//     token, ca.crt and namespace under /var/run/secrets/kubernetes.io/serviceaccount.
// Which one: --kubeconfig FILE, else $KUBECONFIG (first existing entry), else
// in-cluster when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
// Credentials are held in memory only and never appear in an error.
#pragma once

#include <string>

#include "util/result.h"

namespace lazyagent {

struct K8sConnection {
  std::string server;       // https://host:port (no trailing slash)
  std::string ca_pem;       // CA bundle to verify the server ("" = system CAs)
  bool insecure_skip_tls_verify = false;
  std::string token;        // bearer token ("" = none)
  std::string client_cert_pem, client_key_pem;
  std::string default_namespace = "default";
  std::string source;       // "kubeconfig /path (context x)" or "in-cluster service account"
};

// Parses kubeconfig text. `context` "" = current-context. Errors are kUsage
// and name the file and the key.
Result<K8sConnection> parse_kubeconfig(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir, const std::string& context = "");

Result<K8sConnection> load_kubeconfig(const std::string& path, const std::string& context = "");

// The pod's own service account. `sa_dir` is normally
// /var/run/secrets/kubernetes.io/serviceaccount.
Result<K8sConnection> in_cluster_config(const char* service_host, const char* service_port,
                                        const std::string& sa_dir);

// --kubeconfig FILE (may be ""), then the environment, as described above.
Result<K8sConnection> resolve_k8s_connection(const std::string& kubeconfig_flag);

}  // namespace lazyagent
