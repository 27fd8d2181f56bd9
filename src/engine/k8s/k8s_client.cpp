#include "engine/k8s/k8s_client.h"

#include <chrono>

#include "util/interrupt.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

long remaining_ms(std::chrono::steady_clock::time_point deadline) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
}

}  // namespace

std::string k8s_url_escape(const std::string& s) { return url_escape(s); }

std::string k8s_path(const K8sKind& kind, const std::string& ns, const std::string& name) {
  std::string p = std::string(kind.api);
  if (!ns.empty()) p += "/namespaces/" + k8s_url_escape(ns);
  p += std::string("/") + kind.plural;
  if (!name.empty()) p += "/" + k8s_url_escape(name);
  return p;
}

std::string k8s_query(const K8sListQuery& q) {
  std::string s;
  auto add = [&](const char* k, const std::string& v) { s += (s.empty() ? "?" : "&") + std::string(k) + "=" + k8s_url_escape(v); };
  if (!q.label_selector.empty()) add("labelSelector", q.label_selector);
  if (!q.field_selector.empty()) add("fieldSelector", q.field_selector);
  if (q.watch) {
    add("watch", "1");
    add("allowWatchBookmarks", "true");
  }
  if (!q.resource_version.empty()) add("resourceVersion", q.resource_version);
  if (q.timeout_seconds > 0) add("timeoutSeconds", std::to_string(q.timeout_seconds));
  return s;
}

std::string k8s_error_text(long status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  std::string msg, reason;
  if (j.is_object() && j.value("kind", "") == "Status") {
    msg = j.value("message", "");
    reason = j.value("reason", "");
  }
  if (msg.empty()) msg = body.substr(0, 300);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  return "kubernetes said " + std::to_string(status) + (reason.empty() ? "" : " " + reason) + ": " +
         escape_for_terminal(msg.substr(0, 1000));
}

Error k8s_status_error(const std::string& what, long status, const std::string& body) {
  // 502/503/504: what stands in front of an API server that is not there
  // (a load balancer, `kubectl proxy`), or one still starting: an outage.
  const ErrorKind kind = status == 502 || status == 503 || status == 504 ? ErrorKind::kUnreachable : ErrorKind::kEngine;
  return Error{kind, what + ": " + k8s_error_text(status, body)};
}

std::vector<json> WatchDecoder::feed(const std::string& bytes) {
  pending_ += bytes;
  std::vector<json> events;
  std::size_t start = 0;
  for (auto nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n', start)) {
    const std::string line = pending_.substr(start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
    json e = json::parse(line, nullptr, false);
    if (!e.is_object() || !e.contains("type")) {
      e = {{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"message", "not a watch event: " + line.substr(0, 200)}}}};
    }
    events.push_back(std::move(e));
  }
  pending_.erase(0, start);
  return events;
}

K8sClient::K8sClient(K8sConnection conn) : conn_(std::move(conn)) {}

K8sClient::~K8sClient() = default;

Result<K8sResponse> K8sClient::call(const std::string& method, const std::string& path, const std::string& body,
                                    const K8sRequestOptions& opts) {
  TransferRequest t;
  t.method = method;
  t.url = conn_.server + path;
  t.web = true;
  if (!body.empty()) t.headers.push_back("Content-Type: " + opts.content_type);
  t.headers.push_back("Accept: application/json");
  if (!conn_.token.empty()) t.headers.push_back("Authorization: Bearer " + conn_.token);
  if (method == "POST" || method == "PUT" || method == "PATCH" || !body.empty()) t.body = &body;
  t.ca_pem = &conn_.ca_pem;
  t.insecure_skip_tls_verify = conn_.insecure_skip_tls_verify;
  t.client_cert_pem = &conn_.client_cert_pem;
  t.client_key_pem = &conn_.client_key_pem;
  t.connect_timeout_ms = 10000;
  t.timeout_ms = opts.timeout_ms;
  t.max_body = opts.max_body;
  t.interruptible = opts.interruptible;
  if (opts.on_chunk) {
    t.on_chunk = [&opts](const char* data, std::size_t len, long) { return opts.on_chunk(std::string(data, len)); };
  }
  TransferReply x = http_transfer(curl_, t);
  const std::string what = method + " " + path;
  if (x.interrupted()) {
    return Error{ErrorKind::kInterrupted, what + ": interrupted by signal " + std::to_string(interrupted_signal())};
  }
  if (x.timed_out()) return Error{ErrorKind::kTimeout, "timeout after " + std::to_string(opts.timeout_ms) + " ms: " + what};
  // An API server that refuses the connection or drops it mid-call is an
  // outage to wait out (kUnreachable, retryable), as podman's service is:
  // restarting, upgraded, or its node rebooting.
  if (x.connection_refused()) {
    return Error{ErrorKind::kUnreachable, "cannot reach the Kubernetes API at " + conn_.server + " (" + conn_.source +
                                              "): connection refused; is the cluster running? (local: "
                                              "scripts/k8s-cluster.sh start)"};
  }
  if (x.connection_broke()) {
    return Error{ErrorKind::kUnreachable, what + ": the Kubernetes API at " + conn_.server + " went away mid-call (" +
                                              x.curl_error() + "): its server stopped or restarted"};
  }
  if (!x.ok()) return engine_error(what + " at " + conn_.server + ": " + x.curl_error());
  K8sResponse resp;
  resp.status = x.status;
  resp.body = std::move(x.body);
  resp.truncated = x.truncated;
  return resp;
}

Status K8sClient::expect(const Result<K8sResponse>& r, std::initializer_list<long> ok, const std::string& what) {
  if (!r) return r.error().context(what);
  for (long s : ok) {
    if (r->status == s) return ok_status();
  }
  return k8s_status_error(what, r->status, r->body);
}

namespace {
Result<json> parse_reply(const K8sResponse& r, const std::string& what) {
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return engine_error(what + ": the API sent a body that is not JSON");
  return j;
}
}  // namespace

Result<json> K8sClient::version() {
  K8sRequestOptions o;
  o.timeout_ms = 10000;
  auto r = call("GET", "/version", "", o);
  if (auto st = expect(r, {200}, "reading the API server's version"); !st) return st.error();
  return parse_reply(*r, "reading the API server's version");
}

Result<bool> K8sClient::namespace_exists(const std::string& ns) {
  auto r = call("GET", "/api/v1/namespaces/" + k8s_url_escape(ns));
  if (auto st = expect(r, {200, 404}, "reading namespace " + ns); !st) return st.error();
  return r->status == 200;
}

Status K8sClient::create_namespace(const std::string& ns, const json& labels) {
  const json obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}, {"labels", labels}}}};
  auto r = call("POST", "/api/v1/namespaces", obj.dump());
  return expect(r, {201, 409}, "creating namespace " + ns);
}

Result<json> K8sClient::create(const K8sKind& kind, const std::string& ns, const json& object) {
  const std::string name = object.value("/metadata/name"_json_pointer, std::string());
  const std::string what = std::string("creating ") + kind.name + " " + ns + "/" + name;
  auto r = call("POST", k8s_path(kind, ns), object.dump());
  if (auto st = expect(r, {200, 201}, what); !st) return st.error();
  return parse_reply(*r, what);
}

Result<std::optional<json>> K8sClient::get(const K8sKind& kind, const std::string& ns, const std::string& name) {
  const std::string what = std::string("reading ") + kind.name + " " + ns + "/" + name;
  auto r = call("GET", k8s_path(kind, ns, name));
  if (auto st = expect(r, {200, 404}, what); !st) return st.error();
  if (r->status == 404) return std::optional<json>();
  auto j = parse_reply(*r, what);
  if (!j) return j.error();
  return std::optional<json>(std::move(*j));
}

Result<json> K8sClient::replace(const K8sKind& kind, const std::string& ns, const json& object) {
  const std::string name = object.value("/metadata/name"_json_pointer, std::string());
  const std::string what = std::string("replacing ") + kind.name + " " + ns + "/" + name;
  auto r = call("PUT", k8s_path(kind, ns, name), object.dump());
  if (auto st = expect(r, {200, 201}, what); !st) return st.error();
  return parse_reply(*r, what);
}

Result<json> K8sClient::merge_patch(const K8sKind& kind, const std::string& ns, const std::string& name,
                                    const json& patch) {
  const std::string what = std::string("patching ") + kind.name + " " + ns + "/" + name;
  K8sRequestOptions opts;
  opts.content_type = "application/merge-patch+json";
  auto r = call("PATCH", k8s_path(kind, ns, name), patch.dump(), opts);
  if (auto st = expect(r, {200}, what); !st) return st.error();
  return parse_reply(*r, what);
}

Result<json> K8sClient::list(const K8sKind& kind, const std::string& ns, const std::string& label_selector) {
  const std::string what = std::string("listing ") + kind.plural + (ns.empty() ? "" : " in " + ns);
  K8sListQuery q;
  q.label_selector = label_selector;
  auto r = call("GET", k8s_path(kind, ns) + k8s_query(q));
  if (auto st = expect(r, {200}, what); !st) return st.error();
  return parse_reply(*r, what);
}

namespace {
std::string delete_body(long grace_seconds) {
  json b = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
  if (grace_seconds >= 0) b["gracePeriodSeconds"] = grace_seconds;
  return b.dump();
}
}  // namespace

Status K8sClient::remove(const K8sKind& kind, const std::string& ns, const std::string& name, long grace_seconds) {
  auto r = call("DELETE", k8s_path(kind, ns, name), delete_body(grace_seconds));
  return expect(r, {200, 202, 404}, std::string("deleting ") + kind.name + " " + ns + "/" + name);
}

Status K8sClient::remove_all(const K8sKind& kind, const std::string& ns, const std::string& label_selector,
                             long grace_seconds) {
  K8sListQuery q;
  q.label_selector = label_selector;
  auto r = call("DELETE", k8s_path(kind, ns) + k8s_query(q), delete_body(grace_seconds));
  return expect(r, {200, 202, 404}, std::string("deleting ") + kind.plural + " in " + ns + " with " + label_selector);
}

Result<WatchEnd> K8sClient::watch_until(const K8sKind& kind, const std::string& ns, const K8sListQuery& query,
                                        const WatchPredicate& done, long deadline_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  const std::string what = std::string("watching ") + kind.plural + " in " + ns;
  std::string rv = query.resource_version;  // "" = list first
  for (;;) {
    if (interrupted_signal() != 0) {
      return Error{ErrorKind::kInterrupted, what + ": interrupted by signal " + std::to_string(interrupted_signal())};
    }
    if (remaining_ms(deadline) <= 0) return Error{ErrorKind::kTimeout, what + ": deadline of " + std::to_string(deadline_ms) + " ms passed"};
    if (rv.empty()) {
      // List: the current state may already satisfy the predicate.
      K8sListQuery lq = query;
      lq.watch = false;
      lq.resource_version.clear();
      lq.timeout_seconds = 0;
      K8sRequestOptions lo;
      lo.timeout_ms = std::max(1000L, std::min(30000L, remaining_ms(deadline)));
      lo.interruptible = true;
      auto r = call("GET", k8s_path(kind, ns) + k8s_query(lq), "", lo);
      if (auto st = expect(r, {200}, what); !st) return st.error();
      auto j = parse_reply(*r, what);
      if (!j) return j.error();
      for (const auto& item : j->value("items", json::array())) {
        if (done("ADDED", item)) return WatchEnd{item, "ADDED"};
      }
      rv = j->value("/metadata/resourceVersion"_json_pointer, std::string());
      if (rv.empty()) return engine_error(what + ": the list carried no resourceVersion");
    }
    K8sListQuery wq = query;
    wq.watch = true;
    wq.resource_version = rv;
    const long left = remaining_ms(deadline);
    wq.timeout_seconds = std::max(1L, std::min(300L, left / 1000 + 1));
    WatchDecoder decoder;
    std::optional<WatchEnd> found;
    std::optional<Error> failed;
    bool gone = false;
    K8sRequestOptions o;
    o.timeout_ms = std::max(1L, left);
    o.interruptible = true;
    o.on_chunk = [&](const std::string& chunk) {
      for (const auto& e : decoder.feed(chunk)) {
        const std::string type = e.value("type", "");
        const json& obj = e.contains("object") ? e["object"] : json(nullptr);
        if (type == "ERROR") {
          if (obj.is_object() && obj.value("code", 0) == 410) {
            gone = true;  // resourceVersion too old: list again
          } else {
            failed = engine_error(what + ": " + k8s_error_text(obj.value("code", 500), obj.dump()));
          }
          return false;
        }
        const std::string orv = obj.value("/metadata/resourceVersion"_json_pointer, std::string());
        if (!orv.empty()) rv = orv;
        if (type == "BOOKMARK") continue;
        if (done(type, obj)) {
          found = WatchEnd{obj, type};
          return false;
        }
      }
      return true;
    };
    auto r = call("GET", k8s_path(kind, ns) + k8s_query(wq), "", o);
    if (found) return *found;
    if (failed) return *failed;
    if (!r) {
      if (r.error().kind == ErrorKind::kTimeout) {
        return Error{ErrorKind::kTimeout, what + ": deadline of " + std::to_string(deadline_ms) + " ms passed"};
      }
      return r.error().context(what);
    }
    if (r->status == 410 || gone) {
      rv.clear();
      continue;
    }
    if (r->status != 200) return k8s_status_error(what, r->status, r->body);
    // The server ended the stream (its timeoutSeconds): resume from rv.
  }
}

Result<K8sResponse> K8sClient::pod_log(const std::string& ns, const std::string& pod, const std::string& container,
                                       std::size_t limit_bytes) {
  const std::string path = k8s_path(kK8sPods, ns, pod) + "/log?container=" + k8s_url_escape(container) +
                           "&limitBytes=" + std::to_string(limit_bytes);
  K8sRequestOptions o;
  o.timeout_ms = 60000;
  o.max_body = limit_bytes + 1;
  auto r = call("GET", path, "", o);
  if (auto st = expect(r, {200}, "reading the log of pod " + ns + "/" + pod); !st) return st.error();
  return *r;
}

}  // namespace lazyagent
