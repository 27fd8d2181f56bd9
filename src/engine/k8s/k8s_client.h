// The Kubernetes API over HTTPS, with libcurl (http_transfer.h, the one
// transfer helper the podman and provider clients use too).
//
// What the k8s backend needs and nothing more: namespaces; create, get, list
// by label, merge-patch, watch and delete for Jobs, Pods, ConfigMaps and Secrets; a pod's
// log. Paths and query strings are built by pure functions (tested without a
// server). Every failure carries the API's own Status message:
//   "kubernetes said 404 NotFound: jobs.batch \"x\" not found".
// A watch is a long GET whose body is one JSON event per line; it ends when
// the caller's predicate accepts an object, at the caller's deadline (kTimeout)
// or on SIGINT/SIGTERM (kInterrupted); a stream the server closes early is
// resumed from the last resourceVersion, an expired one (410) from a new list.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/http_transfer.h"
#include "engine/k8s/kubeconfig.h"
#include "util/result.h"

namespace lazyagent {

// One resource type: its API group path and plural.
struct K8sKind {
  const char* api;     // "/api/v1" or "/apis/batch/v1"
  const char* plural;  // "pods"
  const char* name;    // "Pod", for messages
};
inline constexpr K8sKind kK8sPods{"/api/v1", "pods", "Pod"};
inline constexpr K8sKind kK8sConfigMaps{"/api/v1", "configmaps", "ConfigMap"};
inline constexpr K8sKind kK8sSecrets{"/api/v1", "secrets", "Secret"};
inline constexpr K8sKind kK8sJobs{"/apis/batch/v1", "jobs", "Job"};
inline constexpr K8sKind kK8sNetworkPolicies{"/apis/networking.k8s.io/v1", "networkpolicies", "NetworkPolicy"};

// Pure request building.
std::string k8s_url_escape(const std::string& s);
// "/apis/batch/v1/namespaces/NS/jobs[/NAME]"
std::string k8s_path(const K8sKind& kind, const std::string& ns, const std::string& name = "");
struct K8sListQuery {
  std::string label_selector;   // "a=b,c"
  std::string field_selector;   // "metadata.name=x"
  bool watch = false;
  std::string resource_version;
  long timeout_seconds = 0;     // server-side end of a watch
};
std::string k8s_query(const K8sListQuery& q);  // "" or "?labelSelector=...&..."

// A Status body -> "kubernetes said 409 AlreadyExists: ...". Anything else ->
// "kubernetes said 500: <first 300 bytes, escaped>".
std::string k8s_error_text(long status, const std::string& body);
// "WHAT: kubernetes said ...", of kind kEngine; kUnreachable for 502, 503
// and 504 (an outage, as a refused or broken connection is: retryable).
Error k8s_status_error(const std::string& what, long status, const std::string& body);

// Splits a watch stream into events; feed it bytes as they come.
class WatchDecoder {
 public:
  // Returns the events completed by `bytes` ({"type":..., "object":...});
  // a line that is not JSON becomes {"type":"ERROR","object":{"message":...}}.
  std::vector<nlohmann::json> feed(const std::string& bytes);

 private:
  std::string pending_;
};

struct K8sResponse {
  long status = 0;
  std::string body;
  bool truncated = false;
};

struct K8sRequestOptions {
  long timeout_ms = 30000;
  std::size_t max_body = 16 * 1024 * 1024;
  std::string content_type = "application/json";
  bool interruptible = false;  // give up when SIGINT/SIGTERM arrives (never for cleanup calls)
  // Called with each chunk as it arrives; return false to stop the transfer.
  std::function<bool(const std::string&)> on_chunk;
};

// What a watch ended with.
struct WatchEnd {
  nlohmann::json object;   // the object the predicate accepted; null if deleted
  std::string event_type;  // ADDED / MODIFIED / DELETED
};

class K8sClient {
 public:
  explicit K8sClient(K8sConnection conn);
  ~K8sClient();
  K8sClient(const K8sClient&) = delete;
  K8sClient& operator=(const K8sClient&) = delete;

  const K8sConnection& connection() const { return conn_; }

  Result<K8sResponse> call(const std::string& method, const std::string& path, const std::string& body = "",
                           const K8sRequestOptions& opts = {});

  // GET /version: {"gitVersion": ...}
  Result<nlohmann::json> version();

  Result<bool> namespace_exists(const std::string& ns);
  Status create_namespace(const std::string& ns, const nlohmann::json& labels);

  Result<nlohmann::json> create(const K8sKind& kind, const std::string& ns, const nlohmann::json& object);
  // The object, or nullopt when it does not exist.
  Result<std::optional<nlohmann::json>> get(const K8sKind& kind, const std::string& ns, const std::string& name);
  // PUT (replace); the object must carry metadata.resourceVersion.
  Result<nlohmann::json> replace(const K8sKind& kind, const std::string& ns, const nlohmann::json& object);
  // PATCH with a JSON merge patch (RFC 7386): only the fields it names change.
  Result<nlohmann::json> merge_patch(const K8sKind& kind, const std::string& ns, const std::string& name,
                                     const nlohmann::json& patch);
  // {"items": [...], "metadata": {"resourceVersion": ...}}
  Result<nlohmann::json> list(const K8sKind& kind, const std::string& ns, const std::string& label_selector);
  // DELETE one object; one already gone is fine. grace_seconds < 0 = the object's own.
  Status remove(const K8sKind& kind, const std::string& ns, const std::string& name, long grace_seconds = -1);
  // DELETE every object matching the selector (propagationPolicy Background).
  Status remove_all(const K8sKind& kind, const std::string& ns, const std::string& label_selector,
                    long grace_seconds = -1);

  // Lists, then watches objects of `kind` matching `q` (label/field
  // selector; with q.resource_version, watches from that version without
  // listing, so nothing made after that list is missed) until `done(event_type, object)` returns true for one, until
  // deadline_ms passes (kTimeout) or a signal arrives (kInterrupted).
  using WatchPredicate = std::function<bool(const std::string& type, const nlohmann::json& object)>;
  Result<WatchEnd> watch_until(const K8sKind& kind, const std::string& ns, const K8sListQuery& q,
                               const WatchPredicate& done, long deadline_ms);

  // A container's log (stdout and stderr interleaved by line), at most
  // limit_bytes.
  Result<K8sResponse> pod_log(const std::string& ns, const std::string& pod, const std::string& container,
                              std::size_t limit_bytes);

 private:
  Status expect(const Result<K8sResponse>& r, std::initializer_list<long> ok, const std::string& what);

  K8sConnection conn_;
  CurlHandle curl_;  // reused so the connection stays open
};

}  // namespace lazyagent
