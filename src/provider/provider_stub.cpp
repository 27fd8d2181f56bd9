#include "provider/provider_stub.h"

// Debian's libcpp-httplib is built with CPPHTTPLIB_OPENSSL_SUPPORT (see its
// cpp-httplib.pc), which adds a member to httplib::Request. Define it here too,
// so that this file sees the same Request layout as the library that fills it.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

namespace lazyagent {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxLoggedBodies = 1000;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string error_json(const std::string& message, const std::string& type) {
  return dump({{"error", {{"message", message}, {"type", type}, {"code", nullptr}}}});
}

const char* error_type(int status) {
  if (status == 429) return "rate_limit_exceeded";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

// Script parsing: every problem, each with its path (STYLE.md principle 6).
struct Problems {
  std::vector<std::string> list;
  void add(const std::string& path, const std::string& what) { list.push_back(path + ": " + what); }
};

void check_keys(const json& obj, const std::string& path, const std::vector<std::string>& known,
                Problems& p) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    p.add(path.empty() ? key : path + "." + key, "unknown key (known: " + names + ")");
  }
}

void read_string(const json& obj, const char* key, const std::string& path, std::string* out, Problems& p) {
  if (!obj.contains(key)) return;
  if (obj[key].is_string()) *out = obj[key].get<std::string>();
  else p.add(path + key, "must be a string");
}

void read_integer(const json& obj, const char* key, const std::string& path, long min, long max,
                  long* out, Problems& p) {
  if (!obj.contains(key)) return;
  const json& v = obj[key];
  if (v.is_number_integer() && v.get<long long>() >= min && v.get<long long>() <= max) {
    *out = static_cast<long>(v.get<long long>());
  } else {
    p.add(path + key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
}

StubReply read_reply(const json& r, const std::string& path, Problems& p) {
  StubReply reply;
  if (!r.is_object()) {
    p.add(path, "must be an object");
    return reply;
  }
  check_keys(r, path, {"match", "status", "content", "raw_body", "delay_ms", "retry_after", "usage", "require",
                       "require_last", "tool_calls"}, p);
  for (auto [key, out] : {std::pair{"require", &reply.require}, std::pair{"require_last", &reply.require_last}}) {
    if (!r.contains(key)) continue;
    const json& q = r[key];
    if (q.is_string() && !q.get<std::string>().empty()) {
      out->push_back(q.get<std::string>());
    } else if (q.is_array() && std::all_of(q.begin(), q.end(), [](const json& x) {
                 return x.is_string() && !x.get<std::string>().empty();
               })) {
      for (const auto& x : q) out->push_back(x.get<std::string>());
    } else {
      p.add(path + "." + key, "must be a non-empty string or an array of non-empty strings");
    }
  }
  if (r.contains("tool_calls")) {
    const json& calls = r["tool_calls"];
    bool good = calls.is_array() && !calls.empty();
    for (std::size_t i = 0; good && i < calls.size(); ++i) {
      const json& c = calls[i];
      good = c.is_object() && c.contains("name") && c["name"].is_string() &&
             (!c.contains("arguments") || c["arguments"].is_object() || c["arguments"].is_string());
      if (good) {
        for (const auto& [k, v] : c.items()) {
          if (k != "name" && k != "arguments") good = false;
        }
      }
    }
    if (good) {
      reply.tool_calls = json::array();
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const json& a = calls[i].contains("arguments") ? calls[i]["arguments"] : json::object();
        reply.tool_calls.push_back({{"type", "function"},
                                    {"function", {{"name", calls[i]["name"]},
                                                  {"arguments", a.is_string() ? a.get<std::string>() : dump(a)}}}});
      }
    } else {
      p.add(path + ".tool_calls", "must be a non-empty array of {\"name\": string, \"arguments\": object or string}");
    }
  }
  const std::string at = path + ".";
  read_string(r, "match", at, &reply.match, p);
  read_string(r, "content", at, &reply.content, p);
  read_string(r, "raw_body", at, &reply.raw_body, p);
  long status = reply.status;
  read_integer(r, "status", at, 100, 599, &status, p);
  reply.status = static_cast<int>(status);
  read_integer(r, "delay_ms", at, 0, 600000, &reply.delay_ms, p);
  if (r.contains("retry_after") && r["retry_after"].is_number_unsigned()) {
    reply.retry_after = std::to_string(r["retry_after"].get<unsigned long long>());
  } else if (r.contains("retry_after") && !r["retry_after"].is_string()) {
    p.add(at + "retry_after", "must be a string (seconds or an HTTP date) or a non-negative integer");
  } else {
    read_string(r, "retry_after", at, &reply.retry_after, p);
  }
  if (r.contains("usage")) {
    const json& u = r["usage"];
    if (!u.is_object()) {
      p.add(at + "usage", "must be an object");
    } else {
      check_keys(u, at + "usage", {"prompt_tokens", "completion_tokens", "total_tokens"}, p);
      const long big = 1L << 40;
      read_integer(u, "prompt_tokens", at + "usage.", 0, big, &reply.usage.prompt_tokens, p);
      read_integer(u, "completion_tokens", at + "usage.", 0, big, &reply.usage.completion_tokens, p);
      reply.usage.total_tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens;
      read_integer(u, "total_tokens", at + "usage.", 0, big, &reply.usage.total_tokens, p);
    }
  }
  return reply;
}

}  // namespace

Result<StubScript> parse_stub_script(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return usage_error("stub script is not JSON: " + what);
  }
  if (!j.is_object()) return usage_error("stub script must be a JSON object with \"replies\"");
  Problems p;
  StubScript script;
  check_keys(j, "", {"api_key", "replies"}, p);
  read_string(j, "api_key", "", &script.api_key, p);
  if (!j.contains("replies") || !j["replies"].is_array() || j["replies"].empty()) {
    p.add("replies", "must be a non-empty array of replies");
  } else {
    for (std::size_t i = 0; i < j["replies"].size(); ++i) {
      script.replies.push_back(read_reply(j["replies"][i], "replies[" + std::to_string(i) + "]", p));
    }
  }
  if (p.list.empty()) return script;
  std::string all;
  for (const auto& s : p.list) all += (all.empty() ? "" : "; ") + s;
  return usage_error("stub script: " + all);
}

struct ProviderStub::Impl {
  StubScript script;
  StubObserver observer;
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::atomic<bool> served{false};  // listen_after_bind() returned

  mutable std::mutex mu;  // guards the fields below
  long requests = 0;
  std::vector<std::string> bodies;
  std::size_t in_order_used = 0;

  bool authorised(const httplib::Request& req) const {
    return script.api_key.empty() || req.get_header_value("Authorization") == "Bearer " + script.api_key;
  }

  // A matching tagged reply first, else the next in-order one (the last repeats).
  int pick(const std::string& body) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<int> in_order;
    for (std::size_t i = 0; i < script.replies.size(); ++i) {
      const auto& r = script.replies[i];
      if (!r.match.empty() && body.find(r.match) != std::string::npos) return static_cast<int>(i);
      if (r.match.empty()) in_order.push_back(static_cast<int>(i));
    }
    if (in_order.empty()) return -1;
    return in_order[std::min(in_order_used++, in_order.size() - 1)];
  }

  void pause(long ms) {  // in small steps so that stop() is prompt
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!stopping && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void answer(const httplib::Request& req, httplib::Response& res, int status, const std::string& body,
              int reply_index) {
    res.status = status;
    const bool is_json = !json::parse(body, nullptr, false).is_discarded();
    res.set_content(body, is_json ? "application/json" : "text/plain; charset=utf-8");
    if (observer) observer(StubRequest{req.method, req.path, status, reply_index, req.body});
  }

  void chat(const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++requests;
      if (bodies.size() == kMaxLoggedBodies) bodies.erase(bodies.begin());  // a long-running stub stays bounded
      bodies.push_back(req.body);
    }
    if (!authorised(req)) return answer(req, res, 401, error_json("invalid api key", "invalid_request_error"), -1);
    const json in = json::parse(req.body, nullptr, false);
    if (!in.is_object() || !in.contains("messages") || !in["messages"].is_array()) {
      return answer(req, res, 400, error_json("request body must be a JSON object with a \"messages\" array",
                                              "invalid_request_error"), -1);
    }
    const int index = pick(req.body);
    if (index < 0) {
      return answer(req, res, 500, error_json("provider stub: no scripted reply for this request", "server_error"), -1);
    }
    const StubReply& r = script.replies[static_cast<std::size_t>(index)];
    if (!r.require.empty()) {
      std::string text;  // the messages' decoded contents
      for (const auto& m : in["messages"]) {
        if (m.is_object() && m.contains("content") && m["content"].is_string()) text += m["content"].get<std::string>() + "\n";
      }
      for (const auto& need : r.require) {
        if (text.find(need) == std::string::npos) {
          return answer(req, res, 400, error_json("provider stub: the request lacks required text: " + need,
                                                  "invalid_request_error"), index);
        }
      }
    }
    if (!r.require_last.empty()) {
      const json& last = in["messages"].empty() ? json() : in["messages"].back();
      const std::string text = last.is_object() && last.contains("content") && last["content"].is_string()
                                   ? last["content"].get<std::string>() : "";
      for (const auto& need : r.require_last) {
        if (text.find(need) == std::string::npos) {
          return answer(req, res, 400, error_json("provider stub: the last message lacks required text: " + need,
                                                  "invalid_request_error"), index);
        }
      }
    }
    pause(r.delay_ms);
    if (stopping) return answer(req, res, 503, error_json("provider stub is stopping", "server_error"), index);
    if (!r.retry_after.empty()) res.set_header("Retry-After", r.retry_after);
    if (!r.raw_body.empty()) return answer(req, res, r.status, r.raw_body, index);
    if (r.status < 200 || r.status > 299) {
      const std::string msg = r.content.empty() ? "scripted error " + std::to_string(r.status) : r.content;
      return answer(req, res, r.status, error_json(msg, error_type(r.status)), index);
    }
    const std::string model = in.contains("model") && in["model"].is_string() ? in["model"].get<std::string>()
                                                                               : "lazyagent-stub";
    json message = {{"role", "assistant"}, {"content", r.content}};
    if (r.tool_calls.is_array()) {
      json calls = r.tool_calls;
      for (std::size_t i = 0; i < calls.size(); ++i) {
        calls[i]["id"] = "call_" + std::to_string(index) + "_" + std::to_string(i);
      }
      message = {{"role", "assistant"}, {"content", r.content.empty() ? json(nullptr) : json(r.content)},
                 {"tool_calls", calls}};
    }
    const json reply = {
        {"id", "chatcmpl-stub-" + std::to_string(index)},
        {"object", "chat.completion"},
        {"created", static_cast<long long>(std::time(nullptr))},
        {"model", model},
        {"choices", json::array({{{"index", 0},
                                  {"message", message},
                                  {"finish_reason", r.tool_calls.is_array() ? "tool_calls" : "stop"}}})},
        {"usage", {{"prompt_tokens", r.usage.prompt_tokens},
                   {"completion_tokens", r.usage.completion_tokens},
                   {"total_tokens", r.usage.total_tokens}}}};
    answer(req, res, r.status, dump(reply), index);
  }

  void models(const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req)) return answer(req, res, 401, error_json("invalid api key", "invalid_request_error"), -1);
    answer(req, res, 200, dump({{"object", "list"},
                                {"data", json::array({{{"id", "lazyagent-stub"}, {"object", "model"},
                                                       {"created", 0}, {"owned_by", "lazyagent-oci"}}})}}),
           -1);
  }
};

ProviderStub::ProviderStub(StubScript script) : impl_(std::make_unique<Impl>()) {
  impl_->script = std::move(script);
  Impl* s = impl_.get();
  auto chat = [s](const httplib::Request& req, httplib::Response& res) { s->chat(req, res); };
  auto models = [s](const httplib::Request& req, httplib::Response& res) { s->models(req, res); };
  s->server.Post("/v1/chat/completions", chat);
  s->server.Post("/chat/completions", chat);
  s->server.Get("/v1/models", models);
  s->server.Get("/models", models);
  // Called for every status >= 400; only unrouted requests arrive without a body.
  s->server.set_error_handler([s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 404 ? "no such endpoint: " + req.method + " " + req.path
                                               : "request refused with HTTP " + std::to_string(res.status);
    s->answer(req, res, res.status, error_json(what, "invalid_request_error"), -1);
  });
  // httplib's default also sets SO_REUSEPORT, which lets a second stub share a
  // busy port and take half its requests; a busy port must be an error instead.
  s->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s->server.set_tcp_nodelay(true);  // else each small reply waits ~40 ms for a delayed ACK
  s->server.set_keep_alive_timeout(1);  // bounds how long stop() waits for idle clients
  s->server.set_read_timeout(5);
  s->server.set_payload_max_length(16u << 20);
}

ProviderStub::~ProviderStub() { stop(); }

void ProviderStub::set_observer(StubObserver observer) { impl_->observer = std::move(observer); }

Result<int> ProviderStub::listen(const std::string& host, int port) {
  if (impl_->thread.joinable()) return usage_error("already listening");
  const std::string where = host + ":" + std::to_string(port);
  const int bound = port == 0 ? impl_->server.bind_to_any_port(host)
                              : (impl_->server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return usage_error("cannot listen on " + where +
                       " (port in use, or not an address of this host)");
  }
  impl_->thread = std::thread([s = impl_.get()] {
    s->server.listen_after_bind();
    s->served = true;
  });
  // stop() only takes effect once the server runs: wait for that, so that a
  // stop() right after listen() cannot leave the thread serving forever. The
  // socket already listens, so early clients wait in its backlog meanwhile.
  while (!impl_->server.is_running() && !impl_->served) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

void ProviderStub::stop() {
  impl_->stopping = true;
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

long ProviderStub::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->requests;
}

std::vector<std::string> ProviderStub::request_log() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->bodies;
}

}  // namespace lazyagent
