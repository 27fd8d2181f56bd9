#include "engine/k8s/kubeconfig.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "util/base64.h"

namespace lazyagent {
namespace {

Result<std::string> read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return usage_error(what + ": cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/' || base_dir.empty()) return p;
  return base_dir + "/" + p;
}

// A named entry of a kubeconfig list (clusters, users, contexts): its inner map.
YAML::Node find_named(const YAML::Node& list, const std::string& name, const char* inner) {
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      if (item["name"] && item["name"].as<std::string>() == name && item[inner].IsMap()) return item[inner];
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string str(const YAML::Node& n, const char* key) {
  return n && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : "";
}

// `data_key` (base64) or `file_key` (a path): the PEM text, "" when neither.
Result<std::string> pem_field(const YAML::Node& n, const char* data_key, const char* file_key,
                              const std::string& base_dir, const std::string& where) {
  if (const std::string d = str(n, data_key); !d.empty()) {
    auto out = base64_decode(d);
    if (!out) return usage_error(where + "." + data_key + ": not valid base64");
    return *out;
  }
  if (const std::string f = str(n, file_key); !f.empty()) return read_file(resolve(base_dir, f), where + "." + file_key);
  return std::string();
}

}  // namespace

Result<K8sConnection> parse_kubeconfig(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir, const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return usage_error(source + ": not YAML: " + e.msg);
  }
  if (!root.IsMap()) return usage_error(source + ": not a kubeconfig (expected a mapping)");
  try {
    const std::string ctx_name = context.empty() ? str(root, "current-context") : context;
    if (ctx_name.empty()) return usage_error(source + ": no current-context (pass a context)");
    const YAML::Node ctx = find_named(root["contexts"], ctx_name, "context");
    if (!ctx.IsMap()) return usage_error(source + ": context '" + ctx_name + "' is not in contexts");
    const std::string cluster_name = str(ctx, "cluster"), user_name = str(ctx, "user");
    const YAML::Node cluster = find_named(root["clusters"], cluster_name, "cluster");
    if (!cluster.IsMap()) return usage_error(source + ": cluster '" + cluster_name + "' (context " + ctx_name + ") is not in clusters");
    K8sConnection c;
    c.source = "kubeconfig " + source + " (context " + ctx_name + ")";
    c.server = str(cluster, "server");
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0) {
      return usage_error(source + ": clusters[" + cluster_name + "].server: expected https://HOST[:PORT], got '" + c.server + "'");
    }
    c.insecure_skip_tls_verify = str(cluster, "insecure-skip-tls-verify") == "true";
    auto ca = pem_field(cluster, "certificate-authority-data", "certificate-authority", base_dir,
                        source + ": clusters[" + cluster_name + "]");
    if (!ca) return ca.error();
    c.ca_pem = *ca;
    if (const std::string ns = str(ctx, "namespace"); !ns.empty()) c.default_namespace = ns;
    if (!user_name.empty()) {
      const YAML::Node user = find_named(root["users"], user_name, "user");
      if (!user.IsMap()) return usage_error(source + ": user '" + user_name + "' (context " + ctx_name + ") is not in users");
      const std::string where = source + ": users[" + user_name + "]";
      if (user["exec"] || user["auth-provider"]) {
        return usage_error(where + ": exec and auth-provider credential plugins are not supported; use a token or a client certificate");
      }
      c.token = str(user, "token");
      if (c.token.empty() && !str(user, "tokenFile").empty()) {
        auto t = read_file(resolve(base_dir, str(user, "tokenFile")), where + ".tokenFile");
        if (!t) return t.error();
        c.token = *t;
        while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) c.token.pop_back();
      }
      auto cert = pem_field(user, "client-certificate-data", "client-certificate", base_dir, where);
      if (!cert) return cert.error();
      auto key = pem_field(user, "client-key-data", "client-key", base_dir, where);
      if (!key) return key.error();
      if (cert->empty() != key->empty()) return usage_error(where + ": a client certificate needs both the certificate and the key");
      c.client_cert_pem = *cert;
      c.client_key_pem = *key;
    }
    return c;
  } catch (const YAML::Exception& e) {
    return usage_error(source + ": " + e.msg);
  }
}

Result<K8sConnection> load_kubeconfig(const std::string& path, const std::string& context) {
  auto text = read_file(path, "kubeconfig");
  if (!text) return text.error();
  const auto slash = path.rfind('/');
  return parse_kubeconfig(*text, path, slash == std::string::npos ? "." : path.substr(0, slash), context);
}

Result<K8sConnection> in_cluster_config(const char* service_host, const char* service_port,
                                        const std::string& sa_dir) {
  if (!service_host || !*service_host || !service_port || !*service_port) {
    return usage_error("in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  K8sConnection c;
  c.source = "in-cluster service account";
  std::string host = service_host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
  c.server = "https://" + host + ":" + service_port;
  auto token = read_file(sa_dir + "/token", "in-cluster config");
  if (!token) return token.error();
  c.token = *token;
  while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) c.token.pop_back();
  auto ca = read_file(sa_dir + "/ca.crt", "in-cluster config");
  if (!ca) return ca.error();
  c.ca_pem = *ca;
  if (auto ns = read_file(sa_dir + "/namespace", "in-cluster config"); ns && !ns->empty()) c.default_namespace = *ns;
  return c;
}

Result<K8sConnection> resolve_k8s_connection(const std::string& kubeconfig_flag) {
  if (!kubeconfig_flag.empty()) return load_kubeconfig(kubeconfig_flag);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::stringstream ss(env);
    std::string entry;
    while (std::getline(ss, entry, ':')) {
      if (!entry.empty() && std::ifstream(entry)) return load_kubeconfig(entry);
    }
    return usage_error(std::string("KUBECONFIG=") + env + ": no readable file in it");
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host && *host) {
    return in_cluster_config(host, std::getenv("KUBERNETES_SERVICE_PORT"),
                             "/var/run/secrets/kubernetes.io/serviceaccount");
  }
  const char* home = std::getenv("HOME");
  const std::string def = std::string(home ? home : "") + "/.kube/config";
  if (std::ifstream(def)) return load_kubeconfig(def);
  return usage_error("no Kubernetes cluster configured: pass --kubeconfig FILE, set KUBECONFIG, or run inside a pod "
                     "(scripts/k8s-cluster.sh start prints a kubeconfig for the local cluster)");
}

}  // namespace lazyagent
