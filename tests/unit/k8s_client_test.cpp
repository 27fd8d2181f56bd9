// The Kubernetes client against a real HTTP server (cpp-httplib on a loopback
// ephemeral port) speaking the API's shapes: Status errors, lists, watch
// streams (chunked, closed early, 410 Gone), collection deletes, pod logs.
// Plus kubeconfig / in-cluster parsing and the pure request builders, and
// the engine's reap (the run store's sweep included) and record look-ups.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#include <httplib.h>

#include "catch_compat.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "util/interrupt.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/k8s_engine.h"
#include "engine/k8s/kubeconfig.h"
#include "store/ownership.h"
#include "store/run_store.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

struct FakeApi {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::mutex mu;
  std::vector<std::string> requests;  // "METHOD path?query auth"

  FakeApi() {
    // Recorded before routing: the client may see its reply before a logger would run.
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      std::lock_guard<std::mutex> l(mu);
      std::string q;
      for (const auto& [k, v] : req.params) q += (q.empty() ? "?" : "&") + k + "=" + v;
      requests.push_back(req.method + " " + req.path + q + " " + req.get_header_value("Authorization"));
      return httplib::Server::HandlerResponse::Unhandled;
    });
  }
  void start() {
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
    for (int i = 0; i < 200 && !server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeApi() {
    server.stop();
    if (thread.joinable()) thread.join();
  }
  K8sConnection conn() const {
    K8sConnection c;
    c.server = "http://127.0.0.1:" + std::to_string(port);
    c.token = "tok-123";
    c.source = "test";
    return c;
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> l(mu);
    return requests;
  }
};

json status_body(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

json pod(const std::string& name, const std::string& rv, json state) {
  return {{"metadata", {{"name", name}, {"resourceVersion", rv}}},
          {"status", {{"phase", "Running"}, {"containerStatuses", {{{"name", "c"}, {"state", state}}}}}}};
}

bool terminated(const std::string&, const json& p) { return pod_end(p).terminated; }

}  // namespace

TEST_CASE("k8s request building: paths, queries, escaping") {
  CHECK(k8s_path(kK8sJobs, "ns1", "job-a") == "/apis/batch/v1/namespaces/ns1/jobs/job-a");
  CHECK(k8s_path(kK8sPods, "default") == "/api/v1/namespaces/default/pods");
  CHECK(k8s_path(kK8sNetworkPolicies, "x") == "/apis/networking.k8s.io/v1/namespaces/x/networkpolicies");
  K8sListQuery q;
  CHECK(k8s_query(q).empty());
  q.label_selector = "io.lazyagent.run=r-1,job-name";
  q.field_selector = "metadata.name=a b";
  q.watch = true;
  q.resource_version = "42";
  q.timeout_seconds = 9;
  CHECK(k8s_query(q) ==
        "?labelSelector=io.lazyagent.run%3Dr-1%2Cjob-name&fieldSelector=metadata.name%3Da%20b"
        "&watch=1&allowWatchBookmarks=true&resourceVersion=42&timeoutSeconds=9");
}

TEST_CASE("k8s errors carry the API's Status message and reason") {
  CHECK(k8s_error_text(404, status_body(404, "NotFound", "jobs.batch \"x\" not found").dump()) ==
        "kubernetes said 404 NotFound: jobs.batch \"x\" not found");
  CHECK(k8s_error_text(502, "bad gateway\n") == "kubernetes said 502: bad gateway");
  // A hostile message cannot drive the terminal.
  CHECK(k8s_error_text(400, status_body(400, "BadRequest", "a\x1b[2Jb").dump()).find('\x1b') == std::string::npos);
}

TEST_CASE("watch decoder: events split across chunks, junk lines become ERROR events") {
  WatchDecoder d;
  CHECK(d.feed("{\"type\":\"ADDED\",\"obj").empty());
  auto e = d.feed("ect\":{\"a\":1}}\n\n{\"type\":\"MODIFIED\",\"object\":{}}\nnot json\n{\"ty");
  REQUIRE(e.size() == 3);
  CHECK(e[0]["type"] == "ADDED");
  CHECK(e[0]["object"]["a"] == 1);
  CHECK(e[1]["type"] == "MODIFIED");
  CHECK(e[2]["type"] == "ERROR");
  CHECK(d.feed("pe\":\"DELETED\",\"object\":{}}\n").at(0)["type"] == "DELETED");
}

TEST_CASE("k8s client: token, create, get (404 = absent), Status errors with context") {
  FakeApi api;
  api.server.Post("/api/v1/namespaces/ns1/configmaps", [](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body);
    if (body["metadata"]["name"] == "dup") {
      res.status = 409;
      res.set_content(status_body(409, "AlreadyExists", "configmaps \"dup\" already exists").dump(), "application/json");
      return;
    }
    res.status = 201;
    res.set_content(body.dump(), "application/json");
  });
  api.server.Get("/api/v1/namespaces/ns1/configmaps/missing", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(status_body(404, "NotFound", "configmaps \"missing\" not found").dump(), "application/json");
  });
  api.start();
  K8sClient k(api.conn());
  auto created = k.create(kK8sConfigMaps, "ns1", {{"metadata", {{"name", "cm"}}}, {"data", {{"k", "v"}}}});
  REQUIRE(created.ok());
  CHECK((*created)["data"]["k"] == "v");
  auto dup = k.create(kK8sConfigMaps, "ns1", {{"metadata", {{"name", "dup"}}}});
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().message ==
        "creating ConfigMap ns1/dup: kubernetes said 409 AlreadyExists: configmaps \"dup\" already exists");
  auto missing = k.get(kK8sConfigMaps, "ns1", "missing");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  const auto seen = api.seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == "POST /api/v1/namespaces/ns1/configmaps Bearer tok-123");
}

TEST_CASE("k8s client: collection delete by label, Background propagation, grace 0, and 404 is fine", "[k8s]") {
  FakeApi api;
  std::string body;
  api.server.Delete("/api/v1/namespaces/ns1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    body = req.body;
    res.set_content(R"({"kind":"PodList","items":[]})", "application/json");
  });
  api.server.Delete("/apis/batch/v1/namespaces/ns1/jobs/gone", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(status_body(404, "NotFound", "not found").dump(), "application/json");
  });
  api.start();
  K8sClient k(api.conn());
  REQUIRE(k.remove_all(kK8sPods, "ns1", "io.lazyagent.run=r-1", 0).ok());
  CHECK(json::parse(body) == json{{"kind", "DeleteOptions"}, {"apiVersion", "v1"},
                                  {"propagationPolicy", "Background"}, {"gracePeriodSeconds", 0}});
  CHECK(api.seen().at(0) == "DELETE /api/v1/namespaces/ns1/pods?labelSelector=io.lazyagent.run=r-1 Bearer tok-123");
  CHECK(k.remove(kK8sJobs, "ns1", "gone").ok());
}

TEST_CASE("k8s watch: the list already satisfies the predicate: no watch request") {
  FakeApi api;
  api.server.Get("/api/v1/namespaces/ns/pods", [](const httplib::Request&, httplib::Response& res) {
    json list = {{"metadata", {{"resourceVersion", "10"}}},
                 {"items", {pod("p1", "9", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}})}}};
    res.set_content(list.dump(), "application/json");
  });
  api.start();
  K8sClient k(api.conn());
  K8sListQuery q;
  q.label_selector = "job-name=j";
  auto end = k.watch_until(kK8sPods, "ns", q, terminated, 5000);
  REQUIRE(end.ok());
  CHECK(end->event_type == "ADDED");
  CHECK(pod_end(end->object).exit_code == 3);
  CHECK(api.seen().size() == 1);
}

TEST_CASE("k8s watch: events stream in chunks, and a stream the server closes is resumed from the last resourceVersion") {
  FakeApi api;
  std::atomic<int> watches{0};
  api.server.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("watch")) {
      res.set_content(json{{"metadata", {{"resourceVersion", "5"}}}, {"items", json::array()}}.dump(), "application/json");
      return;
    }
    const int n = ++watches;
    res.set_chunked_content_provider("application/json", [n](size_t, httplib::DataSink& sink) {
      if (n == 1) {
        // first stream: the pod starts running, then the server closes the stream
        const std::string e = json{{"type", "ADDED"}, {"object", pod("p1", "6", {{"running", json::object()}})}}.dump() + "\n";
        sink.write(e.data(), e.size() / 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        sink.write(e.data() + e.size() / 2, e.size() - e.size() / 2);
      } else {
        const std::string b = json{{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", "7"}}}}}}.dump() + "\n";
        const std::string e = json{{"type", "MODIFIED"}, {"object", pod("p1", "8", {{"terminated", {{"exitCode", 0}}}})}}.dump() + "\n";
        sink.write(b.data(), b.size());
        sink.write(e.data(), e.size());
      }
      sink.done();
      return true;
    });
  });
  api.start();
  K8sClient k(api.conn());
  K8sListQuery q;
  q.label_selector = "job-name=j";
  auto end = k.watch_until(kK8sPods, "ns", q, terminated, 5000);
  REQUIRE(end.ok());
  CHECK(end->event_type == "MODIFIED");
  CHECK(pod_end(end->object).exit_code == 0);
  const auto seen = api.seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].find("resourceVersion=5") != std::string::npos);
  CHECK(seen[2].find("resourceVersion=6") != std::string::npos);  // resumed where the first stream ended
  CHECK(seen[2].find("watch=1") != std::string::npos);
}

TEST_CASE("k8s watch: a given resourceVersion is watched from without a list, so nothing made after it is missed") {
  FakeApi api;
  api.server.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("watch")) {  // a list would show the pod already gone
      res.set_content(json{{"metadata", {{"resourceVersion", "50"}}}, {"items", json::array()}}.dump(), "application/json");
      return;
    }
    const std::string e = json{{"type", "ADDED"}, {"object", pod("p1", "31", {{"terminated", {{"exitCode", 4}}}})}}.dump() + "\n";
    res.set_content(e, "application/json");
  });
  api.start();
  K8sClient k(api.conn());
  K8sListQuery q;
  q.resource_version = "30";
  auto end = k.watch_until(kK8sPods, "ns", q, terminated, 5000);
  REQUIRE(end.ok());
  CHECK(pod_end(end->object).exit_code == 4);
  const auto seen = api.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].find("watch=1") != std::string::npos);
  CHECK(seen[0].find("resourceVersion=30") != std::string::npos);
}

TEST_CASE("k8s watch: 410 Gone lists again") {
  FakeApi api;
  std::atomic<int> lists{0};
  api.server.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("watch")) {
      const int n = ++lists;
      json items = json::array();
      if (n == 2) items.push_back(pod("p1", "20", {{"terminated", {{"exitCode", 1}}}}));
      res.set_content(json{{"metadata", {{"resourceVersion", n == 1 ? "1" : "20"}}}, {"items", items}}.dump(), "application/json");
      return;
    }
    const std::string e = json{{"type", "ERROR"}, {"object", status_body(410, "Expired", "too old resource version")}}.dump() + "\n";
    res.set_content(e, "application/json");
  });
  api.start();
  K8sClient k(api.conn());
  auto end = k.watch_until(kK8sPods, "ns", {}, terminated, 5000);
  REQUIRE(end.ok());
  CHECK(pod_end(end->object).exit_code == 1);
  CHECK(lists == 2);
}

TEST_CASE("k8s watch: the deadline ends a silent stream with kTimeout, a signal with kInterrupted", "[k8s]") {
  FakeApi api;
  std::atomic<bool> stop{false};
  api.server.Get("/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("watch")) {
      res.set_content(json{{"metadata", {{"resourceVersion", "1"}}}, {"items", json::array()}}.dump(), "application/json");
      return;
    }
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      for (int i = 0; i < 100 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      sink.done();
      return true;
    });
  });
  api.start();
  K8sClient k(api.conn());
  const auto t0 = std::chrono::steady_clock::now();
  auto end = k.watch_until(kK8sPods, "ns", {}, terminated, 400);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(end.ok());
  CHECK(end.error().kind == ErrorKind::kTimeout);
  CHECK(end.error().message == "watching pods in ns: deadline of 400 ms passed");
  CHECK(ms < 1500);

  set_interrupted_for_test(2);
  auto intr = k.watch_until(kK8sPods, "ns", {}, terminated, 5000);
  set_interrupted_for_test(0);
  stop = true;
  REQUIRE_FALSE(intr.ok());
  CHECK(intr.error().kind == ErrorKind::kInterrupted);
}

TEST_CASE("k8s pod log: limitBytes and container in the query, body kept") {
  FakeApi api;
  api.server.Get("/api/v1/namespaces/ns/pods/p1/log", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("line1\nline2\n", "text/plain");
  });
  api.start();
  K8sClient k(api.conn());
  auto log = k.pod_log("ns", "p1", "sandbox", 4096);
  REQUIRE(log.ok());
  CHECK(log->body == "line1\nline2\n");
  CHECK(api.seen().at(0) == "GET /api/v1/namespaces/ns/pods/p1/log?container=sandbox&limitBytes=4096 Bearer tok-123");
}

TEST_CASE("k8s client: a server that is not there is an outage (engine_unreachable, retryable) naming it", "[quick]") {
  K8sConnection c;
  c.server = "http://127.0.0.1:1";
  c.source = "kubeconfig /x (context y)";
  K8sClient k(c);
  auto v = k.version();
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().kind == ErrorKind::kUnreachable);
  CHECK(is_retryable(v.error()));
  CHECK(v.error().message ==
        "reading the API server's version: cannot reach the Kubernetes API at http://127.0.0.1:1 (kubeconfig /x (context y)): connection refused; is the "
        "cluster running? (local: scripts/k8s-cluster.sh start)");
  // The engine's check after an outage asks the same: still away.
  K8sEngine engine(std::make_unique<K8sClient>(c), K8sRunSettings{});
  const Status back = engine.after_outage();
  REQUIRE_FALSE(back.ok());
  CHECK(back.error().kind == ErrorKind::kUnreachable);
}

TEST_CASE("k8s client: 502/503/504 and a connection dropped mid-reply are outages, 500 and 403 are not", "[quick]") {
  FakeApi api;
  api.server.Get(R"(/api/v1/namespaces/ns/configmaps/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    res.status = std::stoi(req.matches[1].str().substr(1));  // "s503" -> 503
    res.set_content(status_body(res.status, "ServiceUnavailable", "the server is starting").dump(), "application/json");
  });
  api.server.Get("/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"gitVersion":"v1.20.2"})", "application/json");
  });
  api.start();
  K8sClient k(api.conn());
  for (int status : {502, 503, 504}) {
    auto r = k.get(kK8sConfigMaps, "ns", "s" + std::to_string(status));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kUnreachable);
  }
  auto r503 = k.get(kK8sConfigMaps, "ns", "s503");
  CHECK(r503.error().message.find("kubernetes said 503 ServiceUnavailable: the server is starting") != std::string::npos);
  for (int status : {500, 403}) {
    auto r = k.get(kK8sConfigMaps, "ns", "s" + std::to_string(status));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kEngine);
  }
  // The API server answers: the engine's check after an outage is ok.
  K8sEngine engine(std::make_unique<K8sClient>(api.conn()), K8sRunSettings{});
  CHECK(engine.after_outage().ok());

  // A server that promises a body and closes the connection half way (it
  // stopped or restarted mid-call): what was asked may or may not have happened.
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(ls, 1) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  std::thread dropper([ls] {
    const int c = ::accept(ls, nullptr, nullptr);
    char buf[4096];
    (void)::read(c, buf, sizeof buf);
    const char half[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"gitVer";
    (void)::write(c, half, sizeof half - 1);
    ::close(c);
  });
  K8sConnection c;
  c.server = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  c.source = "test";
  K8sClient dropped(c);
  auto v = dropped.version();
  dropper.join();
  ::close(ls);
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().kind == ErrorKind::kUnreachable);
  CHECK(v.error().message.find("reading the API server's version: GET /version: the Kubernetes API at " + c.server +
                               " went away mid-call (") == 0);
}

TEST_CASE("kubeconfig: current context, token, CA data, client certificate files, namespace") {
  Tmp tmp;
  std::ofstream(tmp.path + "/c.crt") << "CERT-PEM";
  std::ofstream(tmp.path + "/c.key") << "KEY-PEM";
  const std::string text = R"(apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://10.0.0.1:6443/", certificate-authority-data: Q0EtUEVN}
- name: b
  cluster: {server: "https://b:443", insecure-skip-tls-verify: true}
users:
- name: tok
  user: {token: abc}
- name: cert
  user: {client-certificate: c.crt, client-key: c.key}
- name: plugin
  user: {exec: {command: aws}}
contexts:
- name: one
  context: {cluster: a, user: tok, namespace: team}
- name: two
  context: {cluster: b, user: cert}
- name: three
  context: {cluster: b, user: plugin}
current-context: one
)";
  auto one = parse_kubeconfig(text, "kc", tmp.path);
  REQUIRE(one.ok());
  CHECK(one->server == "https://10.0.0.1:6443");
  CHECK(one->ca_pem == "CA-PEM");
  CHECK(one->token == "abc");
  CHECK(one->default_namespace == "team");
  CHECK(one->source == "kubeconfig kc (context one)");
  auto two = parse_kubeconfig(text, "kc", tmp.path, "two");
  REQUIRE(two.ok());
  CHECK(two->insecure_skip_tls_verify);
  CHECK(two->client_cert_pem == "CERT-PEM");
  CHECK(two->client_key_pem == "KEY-PEM");
  CHECK(two->default_namespace == "default");
  auto three = parse_kubeconfig(text, "kc", tmp.path, "three");
  REQUIRE_FALSE(three.ok());
  CHECK(three.error().message ==
        "kc: users[plugin]: exec and auth-provider credential plugins are not supported; use a token or a client certificate");
  auto none = parse_kubeconfig(text, "kc", tmp.path, "four");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "kc: context 'four' is not in contexts");
}

TEST_CASE("in-cluster config: service host/port, token, CA and namespace files") {
  Tmp tmp;
  std::ofstream(tmp.path + "/token") << "sa-token\n";
  std::ofstream(tmp.path + "/ca.crt") << "CA";
  std::ofstream(tmp.path + "/namespace") << "work";
  auto c = in_cluster_config("10.96.0.1", "443", tmp.path);
  REQUIRE(c.ok());
  CHECK(c->server == "https://10.96.0.1:443");
  CHECK(c->token == "sa-token");
  CHECK(c->ca_pem == "CA");
  CHECK(c->default_namespace == "work");
  CHECK_FALSE(in_cluster_config(nullptr, "443", tmp.path).ok());
}

TEST_CASE("k8s engine: reap sweeps the run store as on podman, a record's pod and a process's objects are asked of the API") {
  FakeApi api;
  api.server.Get("/api/v1/namespaces/ns1/pods/p-here", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"metadata":{"name":"p-here"}})", "application/json");
  });
  api.server.Get("/api/v1/namespaces/ns1/pods/p-gone", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(status_body(404, "NotFound", "pods \"p-gone\" not found").dump(), "application/json");
  });
  api.server.Get("/apis/batch/v1/namespaces/ns1/jobs", [](const httplib::Request& req, httplib::Response& res) {
    // reap lists every run's Jobs; left_by_process only this process's
    const bool mine = req.get_param_value("labelSelector").find("io.lazyagent.pid=") != std::string::npos;
    res.set_content(mine ? R"({"items":[{"metadata":{"name":"r-1-sandbox"}}]})" : R"({"items":[]})", "application/json");
  });
  api.server.Get(R"(/api.*)", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"items":[]})", "application/json");
  });
  api.start();

  Tmp t;
  RunStore store(t.path);
  REQUIRE(store.ensure().ok());
  // An interrupted write of a writer that is gone (no such pid), and a
  // record whose process is gone: what the store's sweep removes and closes.
  const std::string tmp_name = "r-20260101-000000-aaaaaa.json.tmp.999999999";
  { std::ofstream(store.runs_dir() + "/" + tmp_name) << "{"; }
  const std::string dead = "r-20260101-000000-dead00";
  REQUIRE(store.write({{"run_id", dead}, {"status", "running"}, {"kind", "test"},
                       {"owner", {{"user_host", current_owner().user_host}, {"pid", 999999999}, {"start_time", "1"}}}})
              .ok());

  K8sRunSettings s;
  s.ns = "ns1";
  K8sEngine engine(std::make_unique<K8sClient>(api.conn()), s, store);
  auto report = engine.reap(false);
  REQUIRE(report.ok());
  CHECK(report->removed.empty());
  CHECK(report->temp_files_removed == std::vector<std::string>{"runs/" + tmp_name});
  CHECK(report->records_closed == std::vector<std::string>{dead});
  CHECK_FALSE(std::filesystem::exists(store.runs_dir() + "/" + tmp_name));
  CHECK((*store.read(dead))["status"] == "interrupted");

  CHECK(*engine.sandbox_exists("ns1/p-here") == true);
  CHECK(*engine.sandbox_exists("ns1/p-gone") == false);
  CHECK(*engine.sandbox_exists("3f2a1b") == false);  // a podman container id: not this engine's
  auto left = engine.left_by_process(4242);
  REQUIRE(left.ok());
  CHECK(*left == std::vector<std::string>{"Job ns1/r-1-sandbox"});
  bool asked_with_owner = false;
  for (const auto& r : api.seen()) {
    if (r.find("io.lazyagent.pid=4242,io.lazyagent.owner=") != std::string::npos) asked_with_owner = true;
  }
  CHECK(asked_with_owner);
  CHECK(engine.warm_pool() == nullptr);
  CHECK_FALSE(engine.environments().ok());
  CHECK(engine.placement().settings == json({{"namespace", "ns1"}, {"runtime_class", s.runtime_class}}));
}
