#include "engine/podman/podman_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "util/interrupt.h"
#include "util/terminal_text.h"

namespace lazyagent {
namespace {

using nlohmann::json;

// LAZYAGENT_PODMAN_CALL_LOG, read once per process; "" when unset.
const std::string& call_log_path() {
  static const std::string path = [] {
    const char* p = std::getenv("LAZYAGENT_PODMAN_CALL_LOG");
    return std::string(p ? p : "");
  }();
  return path;
}

// One line per call, appended with O_APPEND (whole lines from many threads).
void log_call(const std::string& socket, const TransferRequest& t, long status, long ms) {
  const std::string& file = call_log_path();
  if (file.empty()) return;
  const std::string prefix = std::string("http://d") + kApiPrefix;
  const std::string path = t.url.rfind(prefix, 0) == 0 ? t.url.substr(prefix.size()) : t.url;
  const std::string line =
      json{{"method", t.method}, {"path", path}, {"status", status}, {"ms", ms}, {"socket", socket}}.dump() + "\n";
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace

Result<std::string> resolve_podman_socket(const char* container_host, unsigned uid,
                                          const char* xdg_runtime_dir) {
  if (container_host && *container_host) {
    std::string h = container_host;
    const std::string scheme = "unix://";
    if (h.rfind(scheme, 0) != 0 || h.size() == scheme.size()) {
      return usage_error("CONTAINER_HOST=" + h +
                         ": only unix:///path/to/podman.sock is supported (for a remote "
                         "podman, forward its socket locally, e.g. ssh -L)");
    }
    return h.substr(scheme.size());
  }
  if (uid == 0) return std::string("/run/podman/podman.sock");
  if (xdg_runtime_dir && *xdg_runtime_dir) {
    return std::string(xdg_runtime_dir) + "/podman/podman.sock";
  }
  // No systemd user session (a `su -` login): where scripts/setup-rootless.sh
  // puts the user's service, as a user session would.
  return "/run/user/" + std::to_string(uid) + "/podman/podman.sock";
}

Status check_api_version(const std::string& version) {
  int major = 0;
  if (std::sscanf(version.c_str(), "%d", &major) != 1) {
    return engine_error("podman did not report its API version (got '" + version +
                        "'); is this podman's service socket?");
  }
  if (major < 4) {
    return engine_error("podman API " + version +
                        " is too old: lazyagent-oci needs podman 4.0 or newer");
  }
  return ok_status();
}

std::string podman_error_text(long status, const std::string& body) {
  std::string msg;
  const json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("message") && j["message"].is_string()) msg = j["message"].get<std::string>();
    else if (j.contains("cause") && j["cause"].is_string()) msg = j["cause"].get<std::string>();
  }
  if (msg.empty()) msg = body.substr(0, 300);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  return "podman said " + std::to_string(status) + ": " + msg;
}

PodmanClient::PodmanClient(std::string socket_path) : socket_path_(std::move(socket_path)) {}

PodmanClient::~PodmanClient() = default;

Error PodmanClient::transport_error(const TransferReply& x, const std::string& what, long timeout_ms) const {
  if (x.interrupted()) return Error{ErrorKind::kInterrupted, what + ": interrupted by signal " + std::to_string(interrupted_signal())};
  if (x.timed_out()) return Error{ErrorKind::kTimeout, "timeout after " + std::to_string(timeout_ms) + " ms: " + what};
  if (x.connection_refused()) {
    return Error{ErrorKind::kUnreachable,
                 "cannot reach podman at " + socket_path_ +
                     " (connection refused or no such socket): start the service with "
                     "scripts/setup.sh, or `podman system service --time=0 unix://" +
                     socket_path_ + " &`, or set CONTAINER_HOST"};
  }
  if (x.connection_broke()) {
    // The service went away mid-call (stopped, restarted, killed): what was
    // asked may or may not have happened.
    return Error{ErrorKind::kUnreachable, what + ": podman at " + socket_path_ + " went away mid-call (" +
                                              x.curl_error() + "): its service stopped or restarted"};
  }
  return engine_error(what + " via " + socket_path_ + ": " + x.curl_error());
}

std::string podman_error_cause(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  return j.is_object() && j.contains("cause") && j["cause"].is_string() ? j["cause"].get<std::string>() : "";
}

Error podman_status_error(const std::string& what, long status, const std::string& body) {
  // 502/503/504 come from what stands in front of a service that is not
  // there (a proxy, a forwarded socket): an outage, not podman's answer.
  const ErrorKind kind = status == 502 || status == 503 || status == 504 ? ErrorKind::kUnreachable : ErrorKind::kEngine;
  return Error{kind, what + ": " + podman_error_text(status, body)};
}

TransferReply PodmanClient::send(const TransferRequest& t) {
  if (call_log_path().empty()) return http_transfer(curl_, t);
  const auto t0 = std::chrono::steady_clock::now();
  TransferReply x = http_transfer(curl_, t);
  const long ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  log_call(socket_path_, t, x.ok() ? x.status : 0, ms);
  return x;
}

Result<HttpResponse> PodmanClient::call(const std::string& method, const std::string& path,
                                        const std::string& body, const RequestOptions& opts) {
  TransferRequest t;
  t.method = method;
  t.url = std::string("http://d") + kApiPrefix + path;
  t.unix_socket = socket_path_;
  if (!body.empty()) t.headers.push_back("Content-Type: " + opts.content_type);
  if (method == "POST" || method == "PUT" || !body.empty()) t.body = &body;
  t.connect_timeout_ms = 5000;
  t.timeout_ms = opts.timeout_ms;
  t.max_body = opts.max_body;
  t.interruptible = opts.interruptible;
  TransferReply x = send(t);
  if (!x.ok()) return transport_error(x, method + " " + path, opts.timeout_ms);
  HttpResponse resp;
  resp.status = x.status;
  resp.body = std::move(x.body);
  resp.body_truncated = x.truncated;
  resp.api_version = x.header("Libpod-Api-Version");
  return resp;
}

Status PodmanClient::expect(const Result<HttpResponse>& r, std::initializer_list<long> ok_statuses,
                            const std::string& what) {
  if (!r) return r.error().context(what);
  for (long s : ok_statuses) {
    if (r->status == s) return ok_status();
  }
  return podman_status_error(what, r->status, r->body);
}

// 20 s: a socket-activated service (podman.socket, systemd hosts' default)
// answers its first call only once it has started, which on a loaded host
// takes seconds (over 5 s seen in the Debian 13 VM). A service that is not
// there at all is refused at once; only a hung one costs the wait.
Result<std::string> PodmanClient::ping() {
  auto r = call("GET", "/_ping", "", RequestOptions{.timeout_ms = 20000});
  if (auto st = expect(r, {200}, "pinging podman"); !st) return st.error();
  if (auto st = check_api_version(r->api_version); !st) return st.error();
  return r->api_version;
}

namespace {
Result<json> parse_json_reply(const Result<HttpResponse>& r, const std::string& what) {
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return engine_error(what + ": podman sent a body that is not JSON");
  return j;
}
}  // namespace

Result<json> PodmanClient::info() {
  auto r = call("GET", "/info");
  if (auto st = expect(r, {200}, "reading podman info"); !st) return st.error();
  return parse_json_reply(r, "reading podman info");
}

Result<json> PodmanClient::image_inspect(const std::string& image, const std::string& config_key) {
  const std::string what = "inspecting image " + image + " (" + config_key + ")";
  auto r = call("GET", "/images/" + url_escape(image) + "/json");
  if (r && r->status == 404) {
    // The tool's own images are built by `images build`; others are the user's.
    const std::string fix = config_key == "images.sandbox" || config_key == "images.planner"
                                ? "build it with `lazyagent-oci images build --only " + config_key.substr(7) +
                                      "` (or set " + config_key + " in the config to an image that exists)"
                                : "set " + config_key + " in the config to an image that exists";
    return engine_error(what + ": image not found; " + fix);
  }
  if (auto st = expect(r, {200}, what); !st) return st.error();
  return parse_json_reply(r, what);
}

Result<CreateReply> PodmanClient::create(const json& spec) {
  auto r = call("POST", "/containers/create", spec.dump());
  if (auto st = expect(r, {201}, "creating container"); !st) return st.error();
  auto j = parse_json_reply(r, "creating container");
  if (!j) return j.error();
  CreateReply reply;
  if (!j->contains("Id") || !(*j)["Id"].is_string()) {
    return engine_error("creating container: podman's reply has no Id");
  }
  reply.id = (*j)["Id"].get<std::string>();
  if (j->contains("Warnings") && (*j)["Warnings"].is_array()) {
    for (const auto& w : (*j)["Warnings"]) {
      if (w.is_string()) reply.warnings.push_back(w.get<std::string>());
    }
  }
  return reply;
}

Status PodmanClient::init(const std::string& id) {
  return expect(call("POST", "/containers/" + id + "/init"), {204, 304},
                "initialising container " + id.substr(0, 12));
}

Status PodmanClient::start(const std::string& id) {
  return expect(call("POST", "/containers/" + id + "/start"), {204, 304},
                "starting container " + id.substr(0, 12));
}

Result<json> PodmanClient::inspect(const std::string& id) {
  const std::string what = "inspecting container " + id.substr(0, 12);
  auto r = call("GET", "/containers/" + id + "/json");
  if (auto st = expect(r, {200}, what); !st) return st.error();
  return parse_json_reply(r, what);
}

Result<int> PodmanClient::wait(const std::string& id, long deadline_ms) {
  // interval=5ms: podman polls every 250 ms by default, which alone cost
  // ~150 ms per run (ARCHITECTURE section 5).
  RequestOptions opts{.timeout_ms = deadline_ms, .interruptible = true};
  auto r = call("POST", "/containers/" + id + "/wait?condition=exited&interval=" + wait_interval_, "", opts);
  const std::string what = "waiting for container " + id.substr(0, 12);
  if (!r) return r.error();
  if (auto st = expect(r, {200}, what); !st) return st.error();
  try {
    return std::stoi(r->body);
  } catch (...) {
    return engine_error(what + ": podman's reply is not an exit code: " + r->body.substr(0, 80));
  }
}

Result<HttpResponse> PodmanClient::logs(const std::string& id, std::size_t max_bytes) {
  RequestOptions opts{.timeout_ms = 30000, .max_body = max_bytes + 8, .interruptible = true};
  auto r = call("GET", "/containers/" + id + "/logs?stdout=true&stderr=true", "", opts);
  if (auto st = expect(r, {200}, "reading logs of " + id.substr(0, 12)); !st) return st.error();
  return r;
}

Status PodmanClient::kill(const std::string& id, const std::string& signal) {
  auto r = call("POST", "/containers/" + id + "/kill?signal=" + signal);
  if (r && r->status == 409) return ok_status();  // not running any more: fine
  // The same, when it exited between podman's look and its kill (podman
  // 4.3 answers 500 with this cause; seen after a session command's `true`).
  if (r && r->status == 500 && podman_error_cause(r->body) == kCauseStateImproper) return ok_status();
  return expect(r, {204}, "killing container " + id.substr(0, 12));
}

Status PodmanClient::put_archive(const std::string& id, const std::string& dest,
                                 const std::string& tar) {
  RequestOptions opts{.timeout_ms = 60000, .content_type = "application/x-tar"};
  return expect(call("PUT", "/containers/" + id + "/archive?path=" + url_escape(dest), tar, opts),
                {200}, "uploading into container " + id.substr(0, 12));
}

Result<bool> PodmanClient::exists(const std::string& id) {
  auto r = call("GET", "/containers/" + id + "/exists");
  if (!r) return r.error();
  if (r->status == 204) return true;
  if (r->status == 404) return false;
  return podman_status_error("checking container " + id.substr(0, 12), r->status, r->body);
}

// Whether podman's own answer to the DELETE says the container is gone, so
// that no `exists` call is needed to confirm it (measured: 53 ms on a cold
// run, right after the DELETE). libpod answers 200 with one report per
// container only when its removal had no error ({"Id": ..., "RawInput": ...},
// an "Err" otherwise answered 500), and 404 "no such container" when there is
// none. Anything else (204 from a compat path, a body that does not name this
// container) is confirmed by asking.
bool removal_reported(const std::string& id, const HttpResponse& r) {
  if (r.status == 404) return r.body.find("no such container") != std::string::npos;
  if (r.status != 200) return false;
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_array() || j.size() != 1 || !j[0].is_object()) return false;
  const json& rep = j[0];
  const auto err = rep.find("Err");
  if (err != rep.end() && !err->is_null() && !(err->is_string() && err->get<std::string>().empty())) return false;
  for (const char* key : {"Id", "RawInput"}) {
    const auto got = rep.find(key);
    if (got != rep.end() && got->is_string() && got->get<std::string>() == id) return true;
  }
  return false;
}

Status PodmanClient::remove(const std::string& id) {
  const std::string what = "removing container " + id.substr(0, 12);
  std::string last;
  // Right after wait, podman sometimes answers 500 "device or resource busy"
  // (ARCHITECTURE section 5; the container's shm while its exit command runs):
  // retry with a backoff from 5 ms (measured: the next DELETE usually finds it
  // gone at once, so a 50 ms first wait was most of the step) up to 640 ms,
  // ~3.8 s in all, then confirm.
  for (int attempt = 0; attempt < 12; ++attempt) {
    auto r = call("DELETE", "/containers/" + id + "?force=true&v=true",
                  "", RequestOptions{.timeout_ms = 60000});
    if (!r) {
      // Podman unreachable or the request failed in transport: retrying
      // the busy case does not help here, and a dead service would only
      // delay the error by seconds per container (measured: ~4 s each).
      // (An outage keeps its kind: the owner removes it once podman answers.)
      return r.error().context(what);
    } else if (removal_reported(id, *r)) {
      return ok_status();
    } else if (r->status == 200 || r->status == 204 || r->status == 404) {
      auto gone = exists(id);
      if (gone && !*gone) return ok_status();
      if (!gone && gone.error().kind == ErrorKind::kUnreachable) return gone.error().context(what);
      last = gone ? "podman still lists it after DELETE" : gone.error().message;
    } else {
      last = podman_error_text(r->status, r->body);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 << std::min(attempt, 7)));
  }
  return engine_error(what + ": " + last + " (remove it with `lazyagent-oci reap`)");
}

Result<json> PodmanClient::list_by_label(const std::string& label) {
  const json filters = {{"label", json::array({label})}};
  auto r = call("GET", "/containers/json?all=true&filters=" + url_escape(filters.dump()));
  if (auto st = expect(r, {200}, "listing containers"); !st) return st.error();
  return parse_json_reply(r, "listing containers");
}

Result<json> PodmanClient::list_networks_by_label(const std::string& label) {
  const json filters = {{"label", json::array({label})}};
  auto r = call("GET", "/networks/json?filters=" + url_escape(filters.dump()));
  if (auto st = expect(r, {200}, "listing networks"); !st) return st.error();
  return parse_json_reply(r, "listing networks");
}

Status PodmanClient::remove_network(const std::string& name) {
  auto r = call("DELETE", "/networks/" + url_escape(name));
  if (r && r->status == 404) return ok_status();
  return expect(r, {200, 204}, "removing network " + name);
}

Result<bool> PodmanClient::secret_exists(const std::string& name) {
  auto r = call("GET", "/secrets/" + url_escape(name) + "/json");
  if (r && r->status == 404) return false;
  if (auto st = expect(r, {200}, "looking up secret " + name); !st) return st.error();
  return true;
}

Status PodmanClient::secret_create(const std::string& name, const std::string& value,
                                   const std::map<std::string, std::string>& labels) {
  RequestOptions opts;
  opts.content_type = "application/octet-stream";
  std::string path = "/secrets/create?name=" + url_escape(name);
  if (!labels.empty()) path += "&labels=" + url_escape(nlohmann::json(labels).dump());
  auto r = call("POST", path, value, opts);
  return expect(r, {200, 201}, "creating secret " + name);
}

Result<std::map<std::string, std::string>> PodmanClient::secret_labels(const std::string& name) {
  auto r = call("GET", "/secrets/" + url_escape(name) + "/json");
  if (r && r->status == 404) return usage_error("no podman secret named " + name + "; run `lazyagent-oci configure`");
  if (auto st = expect(r, {200}, "inspecting secret " + name); !st) return st.error();
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  std::map<std::string, std::string> out;
  const nlohmann::json::json_pointer at("/Spec/Labels");
  if (j.is_object() && j.contains(at) && j[at].is_object()) {
    for (const auto& [k, v] : j[at].items()) {
      if (v.is_string()) out[k] = v.get<std::string>();
    }
  }
  return out;
}

Status PodmanClient::secret_delete(const std::string& name) {
  auto r = call("DELETE", "/secrets/" + url_escape(name));
  if (r && r->status == 404) return usage_error("no secret named " + name);
  return expect(r, {204, 200}, "deleting secret " + name);
}

Result<nlohmann::json> PodmanClient::secret_list() {
  auto r = call("GET", "/secrets/json");
  if (auto st = expect(r, {200}, "listing secrets"); !st) return st.error();
  return parse_json_reply(r, "listing secrets");
}

Status PodmanClient::export_filesystem(const std::string& id, int fd) {
  const std::string what = "exporting the filesystem of container " + id.substr(0, 12);
  std::string error_body;  // a non-200 reply's body (podman's error JSON)
  int write_errno = 0;
  TransferRequest t;
  t.url = std::string("http://d") + kApiPrefix + "/containers/" + id + "/export";
  t.unix_socket = socket_path_;
  t.connect_timeout_ms = 5000;
  t.timeout_ms = 0;            // no overall deadline (an image may be large) ...
  t.low_speed_seconds = 60;    // ... but a stalled stream fails
  t.interruptible = true;
  t.on_chunk = [&](const char* data, std::size_t len, long status) {
    if (status != 200) {
      if (error_body.size() < 64 * 1024) error_body.append(data, len);
      return true;
    }
    std::size_t done = 0;
    while (done < len) {
      const ssize_t w = ::write(fd, data + done, len - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        write_errno = errno;
        return false;  // stops the transfer
      }
      done += static_cast<std::size_t>(w);
    }
    return true;
  };
  TransferReply x = send(t);
  if (x.stopped && write_errno != 0) return engine_error(what + ": writing the stream: " + std::strerror(write_errno));
  if (!x.ok()) return transport_error(x, what, 0);
  if (x.status != 200) return podman_status_error(what, x.status, error_body);
  return ok_status();
}

Status PodmanClient::stream_get(const std::string& path, const std::function<void(std::string_view)>& on_chunk,
                                long timeout_ms, const std::string& what) {
  return stream("GET", path, nullptr, on_chunk, timeout_ms, what);
}

Status PodmanClient::stream(const std::string& method, const std::string& path, const std::string* body,
                            const std::function<void(std::string_view)>& on_chunk, long timeout_ms,
                            const std::string& what) {
  TransferRequest t;
  t.method = method;
  t.url = std::string("http://d") + kApiPrefix + path;
  t.unix_socket = socket_path_;
  if (body != nullptr) {
    t.headers.push_back("Content-Type: application/json");
    t.body = body;
  }
  t.connect_timeout_ms = 5000;
  t.timeout_ms = timeout_ms;
  t.interruptible = true;
  std::string error_body;
  t.on_chunk = [&](const char* data, std::size_t len, long status) {
    if (status != 200) {
      if (error_body.size() < 4096) error_body.append(data, len);
      return true;
    }
    on_chunk(std::string_view(data, len));
    return true;
  };
  TransferReply x = send(t);
  if (!x.ok()) return transport_error(x, what, timeout_ms);
  if (x.status != 200) return podman_status_error(what, x.status, error_body);
  return ok_status();
}

Result<std::string> PodmanClient::exec_create(const std::string& id, const std::vector<std::string>& cmd,
                                              const std::string& working_dir) {
  const std::string what = "making an exec in container " + id.substr(0, 12);
  const json body = {{"AttachStdin", false}, {"AttachStdout", true}, {"AttachStderr", true},
                     {"Tty", false},         {"Cmd", cmd},           {"WorkingDir", working_dir}};
  auto r = call("POST", "/containers/" + id + "/exec", body.dump());
  if (auto st = expect(r, {200, 201}, what); !st) return st.error();
  auto j = parse_json_reply(r, what);
  if (!j) return j.error();
  const std::string exec_id = j->is_object() ? j->value("Id", "") : "";
  if (exec_id.empty()) return engine_error(what + ": podman's answer has no Id");
  return exec_id;
}

Status PodmanClient::exec_start(const std::string& exec_id, const std::function<void(std::string_view)>& on_chunk,
                                long timeout_ms) {
  static const std::string body = json{{"Detach", false}, {"Tty", false}}.dump();
  return stream("POST", "/exec/" + exec_id + "/start", &body, on_chunk, timeout_ms,
                "running exec " + exec_id.substr(0, 12));
}

Result<int> PodmanClient::exec_exit_code(const std::string& exec_id) {
  const std::string what = "inspecting exec " + exec_id.substr(0, 12);
  auto r = call("GET", "/exec/" + exec_id + "/json");
  if (auto st = expect(r, {200}, what); !st) return st.error();
  auto j = parse_json_reply(r, what);
  if (!j) return j.error();
  if (!j->is_object() || j->value("Running", false)) return -1;
  return j->value("ExitCode", -1);
}

Status PodmanClient::pause(const std::string& id) {
  return expect(call("POST", "/containers/" + id + "/pause"), {204}, "freezing container " + id.substr(0, 12));
}

Status PodmanClient::unpause(const std::string& id) {
  return expect(call("POST", "/containers/" + id + "/unpause"), {204}, "thawing container " + id.substr(0, 12));
}

Result<std::string> PodmanClient::commit(const std::string& id, const std::string& repo, const std::string& tag,
                                         const std::vector<std::string>& changes) {
  std::string q = "/commit?container=" + url_escape(id) + "&repo=" + url_escape(repo) + "&tag=" + url_escape(tag) +
                  "&pause=false";
  for (const auto& c : changes) q += "&changes=" + url_escape(c);
  const std::string what = "committing container " + id.substr(0, 12) + " as " + repo + ":" + tag;
  auto r = call("POST", q, "", RequestOptions{.timeout_ms = 600000, .interruptible = true});
  if (auto st = expect(r, {200, 201}, what); !st) return st.error();
  auto j = parse_json_reply(r, what);
  if (!j) return j.error();
  if (!j->contains("Id") || !(*j)["Id"].is_string()) return engine_error(what + ": podman's reply has no Id");
  return (*j)["Id"].get<std::string>();
}

Result<json> PodmanClient::images_by_label(const std::string& label) {
  const json filters = {{"label", {label}}};
  auto r = call("GET", "/images/json?filters=" + url_escape(filters.dump()));
  if (auto st = expect(r, {200}, "listing images labelled " + label); !st) return st.error();
  return parse_json_reply(r, "listing images labelled " + label);
}

Status PodmanClient::image_remove(const std::string& name) {
  return expect(call("DELETE", "/images/" + url_escape(name)), {200}, "removing image " + name);
}

Status PodmanClient::image_push(const std::string& name, const std::string& destination, bool tls_verify,
                               const std::string& auth, long timeout_ms) {
  const std::string what = "pushing " + name + " to " + destination;
  const std::string path = "/images/" + url_escape(name) + "/push?destination=" + url_escape(destination) +
                           "&tlsVerify=" + (tls_verify ? "true" : "false");
  TransferRequest t;
  t.method = "POST";
  t.url = std::string("http://d") + kApiPrefix + path;
  t.unix_socket = socket_path_;
  if (!auth.empty()) t.headers.push_back("X-Registry-Auth: " + auth);
  const std::string none;
  t.body = &none;
  t.connect_timeout_ms = 5000;
  t.timeout_ms = timeout_ms;
  t.interruptible = true;
  TransferReply x = send(t);
  if (!x.ok()) return transport_error(x, what, timeout_ms);
  if (x.status != 200) return podman_status_error(what, x.status, x.body);
  // A streamed reply may carry the failure in its body ({"error": ...}).
  for (std::size_t from = 0; from < x.body.size();) {
    std::size_t end = x.body.find('\n', from);
    if (end == std::string::npos) end = x.body.size();
    const auto line = nlohmann::json::parse(x.body.substr(from, end - from), nullptr, false);
    if (line.is_object() && line.contains("error") && line["error"].is_string() &&
        !line["error"].get<std::string>().empty()) {
      return engine_error(what + ": podman said: " +
                          escape_for_terminal(line["error"].get<std::string>().substr(0, 500)));
    }
    from = end + 1;
  }
  return ok_status();
}

}  // namespace lazyagent
