#include "cli/mcp_server.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "util/interrupt.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kBusy = -32000;
// Calls waiting behind the running one; more are refused (-32000).
constexpr std::size_t kMaxQueued = 16;

struct PendingCall {
  nlohmann::json id;
  const McpTool* tool = nullptr;
  nlohmann::json args, token;
};

// A line longer than this is not a message we read (a patch is at most a few MiB).
constexpr std::size_t kMaxLineBytes = 16u << 20;

// A real signal (not the client's cancellation, interrupt.h).
int real_signal() {
  const int sig = interrupted_signal();
  return sig > 0 ? sig : 0;
}

class McpServer {
 public:
  McpServer(int out_fd, const std::vector<McpTool>& tools, std::string version)
      : out_fd_(out_fd), tools_(tools), version_(std::move(version)), worker_([this] { work(); }) {}

  ~McpServer() { finish(false); }

  void handle_line(const std::string& line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    json msg = json::parse(line, nullptr, false);
    if (msg.is_discarded()) return send_error(json(nullptr), kParseError, "parse error: the line is not JSON");
    if (!msg.is_object()) {
      return send_error(json(nullptr), kInvalidRequest,
                        msg.is_array() ? "invalid request: batches are not part of MCP 2025-06-18"
                                       : "invalid request: expected a JSON object");
    }
    const json id = msg.contains("id") ? msg["id"] : json();
    if (msg.value("jsonrpc", json()) != "2.0") return send_error(id, kInvalidRequest, "invalid request: jsonrpc must be \"2.0\"");
    if (!msg.contains("method")) return;  // a response to us: we send no requests
    if (!msg["method"].is_string()) return send_error(id, kInvalidRequest, "invalid request: method must be a string");
    const std::string method = msg["method"];
    const json params = msg.contains("params") ? msg["params"] : json::object();
    if (!msg.contains("id")) return notification(method, params);
    if (!id.is_string() && !id.is_number_integer()) {
      return send_error(json(nullptr), kInvalidRequest, "invalid request: id must be a string or an integer");
    }
    if (!params.is_object()) return send_error(id, kInvalidParams, "invalid params: params must be an object");
    request(id, method, params);
  }

  // drain (end of input): every call already read is answered: the running
  // one and the queued ones run to their end, in order, then the worker
  // stops. Not drain (a signal): the queued calls are dropped, the running
  // one is stopped (its sandbox removed; its answer, an error, still sent).
  // Either way the worker is awaited.
  void finish(bool drain) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      if (!drain) {
        queue_.clear();
        if (running_) request_cancel();
      }
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 private:
  void notification(const std::string& method, const json& params) {
    if (method != "notifications/cancelled" || !params.is_object()) return;
    if (!params.contains("requestId")) return;
    const json& which = params["requestId"];
    std::lock_guard<std::mutex> lock(mu_);
    const std::string reason = params.contains("reason") && params["reason"].is_string() ? params["reason"].get<std::string>()
                                                                                           : "no reason given";
    if (running_ && which == running_id_) {
      cancelled_ = true;
      request_cancel();
      std::fprintf(stderr, "lazyagent-oci mcp: request %s cancelled (%s): stopping, the sandbox is removed\n",
                   running_id_.dump().c_str(), escape_for_terminal(reason).c_str());
      return;
    }
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->id == which) {
        queue_.erase(it);
        return;
      }
    }
  }

  void request(const json& id, const std::string& method, const json& params) {
    if (method == "initialize") {
      const std::string asked = params.value("protocolVersion", json()).is_string() ? params["protocolVersion"].get<std::string>() : "";
      const json client = params.value("clientInfo", json::object());
      std::fprintf(stderr, "lazyagent-oci mcp: initialize from %s %s: protocol %s asked, %s answered\n",
                   escape_for_terminal(client.is_object() ? client.value("name", "?") : "?").c_str(),
                   escape_for_terminal(client.is_object() ? client.value("version", "?") : "?").c_str(),
                   escape_for_terminal(asked).c_str(), negotiate_mcp_protocol(asked).c_str());
      return send_result(id, {{"protocolVersion", negotiate_mcp_protocol(asked)},
                              {"capabilities", {{"tools", {{"listChanged", false}}}}},
                              {"serverInfo", {{"name", "lazyagent-oci"}, {"title", "lazyagent-oci"}, {"version", version_}}},
                              {"instructions",
                               "Proves patches in a locked-down sandbox (no network, no secrets, hard caps, always "
                               "removed). test_patch runs a seed's tests with a patch; run_task asks the configured "
                               "model for one first. Seeds are limited to the server's mcp.seeds."}});
    }
    if (method == "ping") return send_result(id, json::object());
    if (method == "tools/list") {
      json list = json::array();
      for (const auto& t : tools_) {
        list.push_back({{"name", t.name}, {"title", t.title}, {"description", t.description}, {"inputSchema", t.input_schema}});
      }
      return send_result(id, {{"tools", list}});
    }
    if (method == "tools/call") return call(id, params);
    send_error(id, kMethodNotFound, "method not found: " + method);
  }

  void call(const json& id, const json& params) {
    if (!params.contains("name") || !params["name"].is_string()) {
      return send_error(id, kInvalidParams, "invalid params: tools/call needs name (a string)");
    }
    const std::string name = params["name"];
    const McpTool* tool = nullptr;
    std::string names;
    for (const auto& t : tools_) {
      if (t.name == name) tool = &t;
      names += (names.empty() ? "" : ", ") + t.name;
    }
    if (tool == nullptr) return send_error(id, kInvalidParams, "unknown tool '" + name + "' (tools: " + names + ")");
    const json args = params.contains("arguments") ? params["arguments"] : json::object();
    if (!args.is_object()) return send_error(id, kInvalidParams, "invalid params: arguments must be an object");
    json token;
    if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")) {
      token = params["_meta"]["progressToken"];
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.size() >= kMaxQueued) {
        return send_error(id, kBusy, "busy: " + std::to_string(queue_.size()) +
                                         " tool calls are waiting; this server runs one call at a time");
      }
      queue_.push_back({id, tool, args, token});
    }
    cv_.notify_all();
  }

  // The calls, one at a time, in the order they came.
  void work() {
    for (;;) {
      PendingCall c;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;          // closing, every call answered
        if (real_signal() != 0) return;      // a signal while draining: the rest are dropped
        c = std::move(queue_.front());
        queue_.pop_front();
        running_ = true;
        cancelled_ = false;
        running_id_ = c.id;
      }
      run_call(*c.tool, c.id, c.args, c.token);
    }
  }

  void run_call(const McpTool& tool, const json& id, const json& args, const json& token) {
    long n = 0;
    ProgressFn progress = [&](const std::string& text) {
      if (token.is_null()) return;
      send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params", {{"progressToken", token}, {"progress", ++n}, {"message", to_valid_utf8(text)}}}});
    };
    auto r = tool.call(args, progress);
    bool cancelled = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled = cancelled_;
      clear_cancel();  // the client's, or end of input's; a real signal stays
      running_ = false;
      running_id_ = json();
    }
    if (!cancelled) {
      if (r) {
        send_result(id, {{"content", {{{"type", "text"}, {"text", r->dump(2, ' ', false, json::error_handler_t::replace)}}}},
                         {"structuredContent", *r},
                         {"isError", false}});
      } else if (r.error().kind == ErrorKind::kUsage || r.error().kind == ErrorKind::kPatch) {
        send_error(id, kInvalidParams, r.error().message);
      } else {
        json e = {{"error", to_valid_utf8(r.error().message)}, {"error_kind", error_kind_name(r.error().kind)}};
        for (const auto& [k, v] : r.error().ids) e[k] = v;
        // The engine was away (an outage): the same call later may work.
        if (is_retryable(r.error())) e["retryable"] = true;
        if (const Category c = category_of(r.error()); c != Category::kNone) e["category"] = category_name(c);
        send_result(id, {{"content", {{{"type", "text"}, {"text", e.dump(2, ' ', false, json::error_handler_t::replace)}}}},
                         {"structuredContent", e},
                         {"isError", true}});
      }
    }
  }

  void send_result(const json& id, const json& result) { send({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}); }

  void send_error(const json& id, int code, const std::string& message) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", to_valid_utf8(message)}}}});
  }

  void send(const json& msg) {
    const std::string line = msg.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(out_mu_);
    std::size_t off = 0;
    while (off < line.size()) {
      const ssize_t w = ::write(out_fd_, line.data() + off, line.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;  // the client went away; end of input follows
      off += static_cast<std::size_t>(w);
    }
  }

  int out_fd_;
  const std::vector<McpTool>& tools_;
  std::string version_;
  std::mutex out_mu_;
  std::mutex mu_;  // everything below but worker_
  std::condition_variable cv_;
  std::deque<PendingCall> queue_;
  bool closing_ = false;
  bool running_ = false;
  bool cancelled_ = false;  // the client cancelled the running call: no answer
  json running_id_;
  std::thread worker_;  // last: started when everything above exists
};

}  // namespace

std::string negotiate_mcp_protocol(const std::string& requested) {
  for (const char* v : {"2025-06-18", "2025-03-26", "2024-11-05"}) {
    if (requested == v) return requested;
  }
  return kMcpProtocolLatest;
}

int serve_mcp(int in_fd, int out_fd, const std::vector<McpTool>& tools, const std::string& version) {
  McpServer server(out_fd, tools, version);
  std::string buf;
  bool skipping = false;  // inside a line over kMaxLineBytes
  char chunk[65536];
  bool end_of_input = false;
  for (;;) {
    if (real_signal() != 0) break;
    pollfd p{in_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 200);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(in_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // end of input: the client sent all it will; answer it all
      end_of_input = true;
      break;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (skipping) {
        skipping = false;
        continue;
      }
      server.handle_line(line);
    }
    if (buf.size() > kMaxLineBytes) {
      buf.clear();
      skipping = true;
      std::fprintf(stderr, "lazyagent-oci mcp: a message over %zu bytes was dropped\n", kMaxLineBytes);
    }
  }
  server.finish(end_of_input && real_signal() == 0);
  const int sig = real_signal();
  return sig != 0 ? 128 + sig : 0;
}

}  // namespace lazyagent
