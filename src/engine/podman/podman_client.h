// Podman's libpod REST API over its unix socket, with libcurl.
//
// Debian 12's cpp-httplib (0.11) cannot dial a unix socket, so this client uses
// libcurl's CURLOPT_UNIX_SOCKET_PATH (through http_transfer.h). One curl
// handle is reused for every call, so the connection stays open between steps. Every failure carries
// podman's own message: "podman said 404: no such container".
//
// The call log: with LAZYAGENT_PODMAN_CALL_LOG=FILE in the environment, every
// request any client in the process sends is appended to FILE as one JSON
// line {"method","path","status","ms","socket"} once it is answered (status 0:
// no answer). It shows where a run's time goes, and a test keeps the list of
// calls a cold and a warm `test` make (STYLE.md 20: a hot path has a call
// budget), so an expensive call added to the run path fails a test.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/http_transfer.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kApiPrefix = "/v4.0.0/libpod";

// Where podman listens: CONTAINER_HOST (unix:///path) like podman itself,
// else /run/podman/podman.sock for root, $XDG_RUNTIME_DIR/podman/podman.sock
// rootless, else /run/user/UID/podman/podman.sock (no user session: where
// scripts/setup-rootless.sh puts it). Pure: the caller passes the environment in.
Result<std::string> resolve_podman_socket(const char* container_host, unsigned uid,
                                          const char* xdg_runtime_dir);

// "4.3.1" -> ok; anything below 4.0 (or unparsable) -> an error saying what to do.
Status check_api_version(const std::string& version);

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string api_version;     // Libpod-Api-Version header, when sent
  bool body_truncated = false; // max_body reached
};

struct RequestOptions {
  long timeout_ms = 30000;
  std::size_t max_body = 16 * 1024 * 1024;
  bool interruptible = false;  // give up when SIGINT/SIGTERM arrives
  std::string content_type = "application/json";
};

// Podman's error body {"cause","message","response"} -> "podman said 500: message".
std::string podman_error_text(long status, const std::string& body);
// The `cause` of podman's error body ("" when none): podman's own error
// class (libpod/define), e.g. kCauseStateImproper.
std::string podman_error_cause(const std::string& body);
inline constexpr const char* kCauseStateImproper = "container state improper";
// "WHAT: podman said 500: message", of kind kEngine; kUnreachable for 502,
// 503 and 504 (a proxy or a forwarded socket in front of a service that is
// not there: an outage, eval waits it out).
Error podman_status_error(const std::string& what, long status, const std::string& body);

struct CreateReply {
  std::string id;
  std::vector<std::string> warnings;
};

class PodmanClient {
 public:
  explicit PodmanClient(std::string socket_path);
  ~PodmanClient();
  PodmanClient(const PodmanClient&) = delete;
  PodmanClient& operator=(const PodmanClient&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  // How often podman checks a waited-for container ("5ms" by default: fast
  // answers for one run; a batch may trade a few ms of latency for less
  // polling CPU in the service). A Go duration.
  void set_wait_interval(std::string interval) { wait_interval_ = std::move(interval); }

  // Raw call: `path` is below kApiPrefix (e.g. "/containers/json").
  Result<HttpResponse> call(const std::string& method, const std::string& path,
                            const std::string& body = "", const RequestOptions& opts = {});

  // GET /_ping, then the version check. Returns the API version.
  Result<std::string> ping();
  Result<nlohmann::json> info();
  // `config_key` names the setting that chose the image (images.sandbox,
  // images.planner): a missing image's error names it, and how to fix it.
  Result<nlohmann::json> image_inspect(const std::string& image, const std::string& config_key);

  Result<CreateReply> create(const nlohmann::json& spec);
  Status init(const std::string& id);
  Status start(const std::string& id);
  Result<nlohmann::json> inspect(const std::string& id);
  // Blocks until the container exits, the deadline passes (error of kind
  // kTimeout), or a signal arrives (kInterrupted).
  Result<int> wait(const std::string& id, long deadline_ms);
  // Raw multiplexed log stream, at most max_bytes (+ one frame header).
  Result<HttpResponse> logs(const std::string& id, std::size_t max_bytes);
  Status kill(const std::string& id, const std::string& signal = "SIGKILL");
  Status put_archive(const std::string& id, const std::string& dest, const std::string& tar);
  Result<bool> exists(const std::string& id);
  // DELETE ?force=true&v=true, retrying "device or resource busy"; gone when
  // podman's answer says so (removal_reported), else confirmed with
  // exists() == false. Removing a container already gone is ok.
  Status remove(const std::string& id);
  // Containers (running or not) carrying `label` (key or key=value).
  Result<nlohmann::json> list_by_label(const std::string& label);
  // Networks carrying `label` (key or key=value): libpod's network objects
  // ("name", "labels", ...).
  Result<nlohmann::json> list_networks_by_label(const std::string& label);
  // Removes the network `name` (not forced: a container still on it is an
  // error); one already gone is ok.
  Status remove_network(const std::string& name);

  // Podman secrets (values are never returned by podman, nor logged here).
  Result<bool> secret_exists(const std::string& name);
  // `labels` are stored with it, readable by anyone who can list secrets
  // (configure records the provider's HOST:PORT there, never the URL).
  Status secret_create(const std::string& name, const std::string& value,
                       const std::map<std::string, std::string>& labels = {});
  // A secret's labels; an error naming it when there is no such secret.
  Result<std::map<std::string, std::string>> secret_labels(const std::string& name);
  Status secret_delete(const std::string& name);  // a missing secret is an error
  Result<nlohmann::json> secret_list();

  // GET `path` (below kApiPrefix), each chunk of a 200 reply's body handed to
  // `on_chunk` as it arrives (a followed log). Another status is an error
  // with podman's message. timeout_ms bounds the whole transfer (kTimeout).
  Status stream_get(const std::string& path, const std::function<void(std::string_view)>& on_chunk,
                    long timeout_ms, const std::string& what);

  // The exec API (a live session's commands, session.h): POST
  // /containers/{id}/exec makes an exec of `cmd` (stdout and stderr
  // attached, no stdin, no tty, the container's environment only) and
  // returns its id; exec_start runs it, each chunk of its multiplexed output
  // (log_stream.h) to `on_chunk` as it arrives, until the process and every
  // holder of its output end (kTimeout at timeout_ms: it may still run);
  // exec_exit_code reads its exit code once it has ended (-1: still running).
  Result<std::string> exec_create(const std::string& id, const std::vector<std::string>& cmd,
                                  const std::string& working_dir);
  Status exec_start(const std::string& exec_id, const std::function<void(std::string_view)>& on_chunk,
                    long timeout_ms);
  Result<int> exec_exit_code(const std::string& exec_id);
  // POST /containers/{id}/pause and /unpause: the cgroup freezer.
  Status pause(const std::string& id);
  Status unpause(const std::string& id);
  // POST /commit: the container's filesystem as image repo:tag; `changes`
  // are Containerfile instructions (LABEL, WORKDIR). Returns the image id.
  Result<std::string> commit(const std::string& id, const std::string& repo, const std::string& tag,
                             const std::vector<std::string>& changes);
  // Images carrying `label` (key or key=value), as podman lists them.
  Result<nlohmann::json> images_by_label(const std::string& label);
  // DELETE /images/{name}: an image in use is an error naming it.
  Status image_remove(const std::string& name);
  // POST /images/{name}/push?destination=...&tlsVerify=...: the podman
  // service pushes the image to a registry (X-Registry-Auth: `auth`, the
  // base64 of {"username","password"}; "" = none). Podman 4.3 answers when
  // the push is done; the caller checks the registry for what arrived.
  Status image_push(const std::string& name, const std::string& destination, bool tls_verify,
                    const std::string& auth, long timeout_ms);

  // GET /containers/{id}/export: the container's filesystem as a tar stream,
  // written to `fd` as it arrives (an image's root is too big to hold in
  // memory). Stops on SIGINT/SIGTERM (kInterrupted) and when `fd` fails, e.g.
  // a pipe whose reader died (EPIPE: SIGPIPE is ignored by the CLI).
  Status export_filesystem(const std::string& id, int fd);

 private:
  Status expect(const Result<HttpResponse>& r, std::initializer_list<long> ok_statuses,
                const std::string& what);
  Error transport_error(const TransferReply& x, const std::string& what, long timeout_ms) const;
  // Every request goes through here: http_transfer, then the call log.
  TransferReply send(const TransferRequest& t);
  // One streamed call (stream_get, exec_start): a 200 reply's body chunk by chunk.
  Status stream(const std::string& method, const std::string& path, const std::string* body,
                const std::function<void(std::string_view)>& on_chunk, long timeout_ms, const std::string& what);

  std::string socket_path_;
  std::string wait_interval_ = "5ms";
  CurlHandle curl_;  // reused so the connection stays open
};

// Owns one container: removes it when it goes out of scope unless it was
// removed already (STYLE.md principle 13). Every container we create is held
// by one from the moment podman names it.
class ScopedContainer {
 public:
  explicit ScopedContainer(PodmanClient& podman, std::string id = "") : podman_(podman), id_(std::move(id)) {}
  ~ScopedContainer() {
    if (!id_.empty()) (void)podman_.remove(id_);
  }
  ScopedContainer(const ScopedContainer&) = delete;
  ScopedContainer& operator=(const ScopedContainer&) = delete;
  void hold(std::string id) { id_ = std::move(id); }
  const std::string& id() const { return id_; }
  // Removes it now; on success it is no longer held.
  Status remove_now() {
    if (id_.empty()) return ok_status();
    auto st = podman_.remove(id_);
    if (st) id_.clear();
    return st;
  }

 private:
  PodmanClient& podman_;
  std::string id_;
};

// Whether podman's answer to DELETE /containers/ID says that container is
// gone: 200 with one error-free report naming it, or 404 "no such container".
bool removal_reported(const std::string& id, const HttpResponse& r);

}  // namespace lazyagent
