#include "provider/provider_client.h"

#include <curl/curl.h>  // curl_getdate (Retry-After)
#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/elapsed.h"
#include "util/http_transfer.h"
#include "util/interrupt.h"
#include "util/terminal_text.h"

namespace lazyagent {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxReplyBytes = 8u << 20;
constexpr long kMaxRetryAfterMs = 60000;
constexpr const char* kAccepted =
    "expected https://HOST[:PORT][/PATH]/v1, or http:// only for localhost, 127.0.0.0/8, "
    "[::1] or host.containers.internal";

Error planner_error(std::string m) { return Error{ErrorKind::kPlanner, std::move(m)}; }

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Untrusted text for a one-line message: at most max_bytes, no line breaks,
// control characters shown as escapes (ARCHITECTURE invariant 8).
std::string one_line(std::string_view text, std::size_t max_bytes) {
  bool cut = false;
  std::string s = truncate_utf8(text, max_bytes, cut);
  for (char& c : s) c = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  return escape_for_terminal(trim_space(s)) + (cut ? "..." : "");
}

// 127.0.0.0/8 as a strict dotted quad ("127.1" and "0127.0.0.1" are not).
bool is_ipv4_loopback(const std::string& host) {
  int parts = 0;
  std::size_t i = 0;
  while (i <= host.size()) {
    const std::size_t dot = std::min(host.find('.', i), host.size());
    const std::string part = host.substr(i, dot - i);
    if (!all_digits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    if (std::stoi(part) > 255 || (parts == 0 && part != "127")) return false;
    ++parts;
    i = dot + 1;
  }
  return parts == 4;
}

bool is_local_host(const std::string& host) { return is_loopback_host(host) || lower(host) == "host.containers.internal"; }

// finish_reason, the provider's model name and the token usage, whatever the
// reply's content. Usage is informative: a malformed count reads as 0 rather
// than failing a good reply.
void read_reply_meta(const json& j, const json& choice, ChatReply* reply) {
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    reply->finish_reason = choice["finish_reason"].get<std::string>();
  }
  if (j.contains("model") && j["model"].is_string()) reply->model = j["model"].get<std::string>();
  if (j.contains("usage") && j["usage"].is_object()) {
    auto count = [&](const char* key) -> long {
      const json& u = j["usage"];
      if (!u.contains(key) || !u[key].is_number_integer() || u[key].get<long long>() < 0) return 0;
      return static_cast<long>(std::min<long long>(u[key].get<long long>(), 1LL << 40));
    };
    reply->usage = {count("prompt_tokens"), count("completion_tokens"), count("total_tokens")};
  }
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  const std::string h = lower(host);
  return h == "localhost" || h == "[::1]" || is_ipv4_loopback(h);
}

Status validate_base_url(const std::string& url) {
  // Echo the URL only up to any query (where keys like ?api_key= live), and
  // not at all when it may carry credentials.
  const bool may_hold_secret = url.find('@') != std::string::npos;
  const std::string shown =
      may_hold_secret ? "" : "'" + one_line(url.substr(0, url.find('?')), 200) + "' ";
  auto refuse = [&](const std::string& why) {
    return usage_error("provider URL " + shown + why + "; " + kAccepted);
  };
  if (url.empty()) return usage_error(std::string("provider URL is empty; ") + kAccepted);
  for (unsigned char c : url) {
    if (c <= ' ' || c == 0x7f) return refuse("contains a space or control character");
  }
  const std::string head = lower(url.substr(0, 8));
  const bool https = head.rfind("https://", 0) == 0;
  if (!https && head.rfind("http://", 0) != 0) {
    return refuse(url.find("://") == std::string::npos ? "has no scheme" : "has an unsupported scheme");
  }
  if (url.find_first_of("?#") != std::string::npos) return refuse("has a query or fragment");
  const std::string rest = url.substr(https ? 8 : 7);
  const std::size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) {
    return refuse("contains user:password@ (give the API key separately, never in the URL)");
  }
  std::string host = authority, port;
  if (!authority.empty() && authority[0] == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return refuse("has an unclosed '[' in its host");
    host = authority.substr(0, close + 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty() && after[0] != ':') return refuse("has text after its [IPv6] host");
    if (!after.empty()) port = after.substr(1);
    if (host.size() < 3) return refuse("has an empty [IPv6] host");
  } else if (const std::size_t colon = authority.find(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.find(':') != std::string::npos) return refuse("has an IPv6 host without [brackets]");
  }
  if (host.empty()) return refuse("has no host");
  const bool bracketed = host[0] == '[';
  const std::string inner = bracketed ? host.substr(1, host.size() - 2) : host;
  const char* allowed = bracketed ? "0123456789abcdef:." : "abcdefghijklmnopqrstuvwxyz0123456789.-_";
  if (lower(inner).find_first_not_of(allowed) != std::string::npos) {
    return refuse("has a character its host cannot have");
  }
  const bool port_given = authority.find(':', host.size()) != std::string::npos;
  if (port_given && (!all_digits(port) || port.size() > 5 || std::stol(port) < 1 || std::stol(port) > 65535)) {
    return refuse("has a port that is not a number from 1 to 65535");
  }
  std::string p = path;
  if (!p.empty() && p.back() == '/') p.pop_back();
  if (p.size() < 3 || p.compare(p.size() - 3, 3, "/v1") != 0) return refuse("does not end with /v1");
  if (!https && !is_local_host(host)) {
    return refuse("uses plain http for a host that is not local (the API key would cross the "
                  "network unencrypted)");
  }
  return ok_status();
}

std::string redact(const std::string& text, const std::string& secret) {
  if (secret.empty()) return text;
  std::string out;
  std::size_t from = 0;
  for (std::size_t at; (at = text.find(secret, from)) != std::string::npos; from = at + secret.size()) {
    out.append(text, from, at - from).append("[redacted]");
  }
  return out.append(text, from, std::string::npos);
}

long retry_after_ms(const std::string& header_value, long fallback_ms) {
  const std::string v = trim_space(header_value);
  long ms = fallback_ms;
  if (all_digits(v)) {
    ms = v.size() > 6 ? kMaxRetryAfterMs : std::stol(v) * 1000;
  } else if (!v.empty()) {
    const time_t when = curl_getdate(v.c_str(), nullptr);  // RFC 7231 HTTP-date and kin
    if (when != -1) ms = static_cast<long>(std::difftime(when, std::time(nullptr)) * 1000.0);
  }
  return std::clamp(ms, 0L, kMaxRetryAfterMs);
}

std::string provider_error_text(const std::string& body) {
  std::string msg;
  const json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    auto string_at = [&](const json& o, const char* key) {
      return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
    };
    if (j.contains("error") && j["error"].is_object()) msg = string_at(j["error"], "message");
    if (msg.empty()) msg = string_at(j, "error");
    if (msg.empty()) msg = string_at(j, "message");
    if (msg.empty()) msg = string_at(j, "detail");
  }
  if (msg.empty()) msg = body;
  msg = one_line(msg, 300);
  return msg.empty() ? "(empty reply)" : msg;
}

Result<ChatReply> parse_chat_response(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    return planner_error("provider reply is not JSON (starts with '" + one_line(body, 60) + "')");
  }
  if (!j.is_object()) return planner_error("provider reply is not a JSON object");
  const bool has_choice = j.contains("choices") && j["choices"].is_array() && !j["choices"].empty();
  const json* choice = has_choice && j["choices"][0].is_object() ? &j["choices"][0] : nullptr;
  if (!choice && j.contains("error")) {
    return planner_error("provider reply has no choices but an error: " + provider_error_text(body));
  }
  const json* message = choice && choice->contains("message") && (*choice)["message"].is_object()
                            ? &(*choice)["message"] : nullptr;
  // Tool calls, each checked for its shape and normalised: arguments as a
  // string (some servers send an object), an id made up when absent.
  json calls = nullptr;
  if (message && message->contains("tool_calls") && (*message)["tool_calls"].is_array() &&
      !(*message)["tool_calls"].empty()) {
    calls = json::array();
    for (const json& c : (*message)["tool_calls"]) {
      const json* f = c.is_object() && c.contains("function") && c["function"].is_object() ? &c["function"] : nullptr;
      if (!f || !f->contains("name") || !(*f)["name"].is_string()) {
        return planner_error("provider reply has a tool call without function.name");
      }
      const json& args = f->contains("arguments") ? (*f)["arguments"] : json();
      calls.push_back({{"id", c.contains("id") && c["id"].is_string() ? c["id"].get<std::string>()
                                                                      : "call_" + std::to_string(calls.size())},
                       {"type", "function"},
                       {"function",
                        {{"name", (*f)["name"]},
                         {"arguments", args.is_string() ? args.get<std::string>()
                                                        : args.is_null() ? std::string("{}")
                                                                         : args.dump(-1, ' ', false, json::error_handler_t::replace)}}}});
    }
  }
  const bool no_content = !message || !message->contains("content") || !(*message)["content"].is_string();
  if (no_content && calls.is_array()) {
    ChatReply reply;
    reply.tool_calls = std::move(calls);
    read_reply_meta(j, *choice, &reply);
    return reply;
  }
  if (no_content) {
    if (message && message->contains("refusal") && (*message)["refusal"].is_string()) {
      return planner_error("the model refused: " + one_line((*message)["refusal"].get<std::string>(), 300));
    }
    return planner_error("provider reply has no choices[0].message.content");
  }
  ChatReply reply;
  reply.content = (*message)["content"].get<std::string>();
  reply.tool_calls = std::move(calls);
  read_reply_meta(j, *choice, &reply);
  return reply;
}

namespace {

// One HTTP exchange (http_transfer.h) ----------------------------------------

TransferReply post(const CurlHandle& curl, const std::string& url, const std::vector<std::string>& headers,
                   const std::string& body, const ProviderSettings& s) {
  TransferRequest t;
  t.method = "POST";
  t.url = url;
  t.web = true;
  t.headers = headers;
  t.body = &body;
  t.connect_timeout_ms = s.connect_timeout_ms;
  t.timeout_ms = s.total_timeout_ms;
  t.max_body = kMaxReplyBytes;  // larger than any patch we would accept: the transfer stops
  t.interruptible = true;
  return http_transfer(curl, t);
}

std::string request_body(const ProviderSettings& s, const ChatRequest& r, ResponseFormat format, bool tools) {
  json messages = json::array();
  for (const auto& m : r.messages) {
    json msg = {{"role", m.role}, {"content", m.content}};
    if (m.tool_calls.is_array() && !m.tool_calls.empty()) {
      msg["tool_calls"] = m.tool_calls;
      if (m.content.empty()) msg["content"] = nullptr;
    }
    if (!m.tool_call_id.empty()) msg["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(msg));
  }
  json j = {{"model", s.model}, {"messages", messages}, {"temperature", r.temperature}};
  if (tools && r.tools.is_array()) {
    j["tools"] = r.tools;
    if (!r.tool_choice.empty()) j["tool_choice"] = r.tool_choice;
  }
  if (format == ResponseFormat::kJsonSchema) {
    json schema = r.json_schema.is_object() ? r.json_schema : json::object();
    schema["strict"] = true;
    j["response_format"] = {{"type", "json_schema"}, {"json_schema", schema}};
  } else if (format == ResponseFormat::kJsonObject) {
    j["response_format"] = {{"type", "json_object"}};
  }
  if (r.max_tokens > 0) j["max_tokens"] = r.max_tokens;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);  // invalid UTF-8 -> U+FFFD
}

// A provider that does not take `tools` says so in a 400 (vLLM without
// --enable-auto-tool-choice: "\"auto\" tool choice requires ...", llama.cpp
// without --jinja: "tools param requires --jinja flag").
bool mentions_tools(const std::string& body) {
  const std::string b = lower(provider_error_text(body));
  return b.find("tool") != std::string::npos;
}

bool mentions_response_format(const std::string& body) {
  const std::string b = lower(body);
  for (const char* word : {"response_format", "json_object", "json_schema"}) {
    if (b.find(word) != std::string::npos) return true;
  }
  return false;
}

ResponseFormat weaker(ResponseFormat f) {
  return f == ResponseFormat::kJsonSchema ? ResponseFormat::kJsonObject : ResponseFormat::kNone;
}

// Waits ms in small steps; false when a signal arrived meanwhile.
bool sleep_unless_interrupted(long ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < until) {
    if (interrupted_signal() != 0) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(20), until - Clock::now()));
  }
  return interrupted_signal() == 0;
}

}  // namespace

Result<ChatReply> chat_completion(const ProviderSettings& s, const ChatRequest& request,
                                  const ProviderLog& log, int* attempts_made) {
  int unused = 0;
  int& attempts = attempts_made != nullptr ? *attempts_made : unused;
  attempts = 0;
  auto say = [&](const std::string& line) {
    if (log) log(redact(line, s.api_key));
  };
  auto fail = [&](ErrorKind kind, const std::string& what, int n) {
    const std::string after = " (after " + std::to_string(n) + (n == 1 ? " attempt)" : " attempts)");
    return Error{kind, redact(what + after, s.api_key)};
  };
  if (auto st = validate_base_url(s.base_url); !st) return st.error();
  if (s.model.empty()) return usage_error("no provider model given");
  for (unsigned char c : s.api_key) {
    if (c <= ' ' || c == 0x7f) return usage_error("the provider API key contains a space or control character");
  }
  const std::string base = s.base_url.back() == '/' ? s.base_url.substr(0, s.base_url.size() - 1) : s.base_url;
  const std::string url = base + "/chat/completions";

  const CurlHandle curl;  // one connection for every attempt
  if (!curl.get()) return planner_error("libcurl could not be initialised");
  std::vector<std::string> headers = {"Content-Type: application/json", "Accept: application/json"};
  if (!s.api_key.empty()) headers.push_back("Authorization: Bearer " + s.api_key);

  const auto start = Clock::now();
  ResponseFormat format = request.response_format;
  if (format == ResponseFormat::kJsonSchema && !request.json_schema.is_object()) format = ResponseFormat::kJsonObject;
  std::vector<std::string> refusals;
  std::string tools_refusal;
  bool send_tools = request.tools.is_array();
  int retries = 0;
  long backoff = std::max(0L, s.backoff_ms);
  while (true) {
    if (interrupted_signal() != 0) break;
    ++attempts;
    say("provider: attempt " + std::to_string(attempts) + ": POST " + url + " (model " + s.model +
        (format == ResponseFormat::kNone ? std::string() : std::string(", ") + response_format_name(format)) + ")");
    const auto t0 = Clock::now();
    const TransferReply x = post(curl, url, headers, request_body(s, request, format, send_tools), s);
    const long took = ms_since(t0);
    std::string problem;
    bool retryable = true;
    if (x.interrupted()) break;
    if (x.truncated) {
      return fail(ErrorKind::kPlanner, "provider reply is larger than 8 MiB", attempts);
    } else if (x.timed_out()) {
      problem = x.connected ? "provider did not answer within " + std::to_string(s.total_timeout_ms) + " ms"
                            : "cannot connect to the provider at " + base + ": timed out";
    } else if (x.could_not_connect()) {
      const std::string why = x.connection_refused() && x.os_errno != 0
                                  ? std::strerror(static_cast<int>(x.os_errno)) : x.curl_error();
      problem = "cannot connect to the provider at " + base + ": " + why;
    } else if (x.connection_broke()) {
      problem = "the connection to the provider at " + base + " broke: " + x.curl_error();
    } else if (!x.ok()) {  // TLS, protocol, ...: retrying would not help
      return fail(ErrorKind::kPlanner, "cannot talk to the provider at " + base + ": " + x.curl_error(), attempts);
    } else if (x.status >= 200 && x.status < 300) {
      auto reply = parse_chat_response(x.body);
      if (!reply) return fail(ErrorKind::kPlanner, reply.error().message, attempts);
      say("provider: HTTP " + std::to_string(x.status) + " in " + std::to_string(took) + " ms, " +
          std::to_string(reply->usage.total_tokens) + " tokens");
      reply->attempts = attempts;
      reply->elapsed_ms = ms_since(start);
      reply->response_format = format;
      reply->format_refusals = refusals;
      reply->tools_refusal = tools_refusal;
      return reply;
    } else {
      problem = "provider said " + std::to_string(x.status) + ": " + provider_error_text(x.body);
      if ((x.status == 400 || x.status == 422) && send_tools && mentions_tools(x.body)) {  // at most once
        tools_refusal = redact(provider_error_text(x.body), s.api_key);
        say("provider: HTTP " + std::to_string(x.status) + " about tools; retrying at once without them");
        send_tools = false;
        continue;
      }
      if ((x.status == 400 || x.status == 422) && format != ResponseFormat::kNone &&
          mentions_response_format(x.body)) {  // each format at most once
        const ResponseFormat next = weaker(format);
        refusals.push_back(redact(std::string(response_format_name(format)) + ": " + provider_error_text(x.body), s.api_key));
        say("provider: HTTP " + std::to_string(x.status) + " about response_format " + response_format_name(format) +
            "; retrying at once " +
            (next == ResponseFormat::kNone ? std::string("without it") : std::string("with ") + response_format_name(next)));
        format = next;
        continue;
      }
      retryable = x.status == 429 || x.status >= 500;
    }
    say("provider: " + problem + " after " + std::to_string(took) + " ms");
    if (!retryable || retries >= s.max_retries) return fail(ErrorKind::kPlanner, problem, attempts);
    ++retries;
    const std::string retry_after = x.header("Retry-After");
    const bool told = !retry_after.empty() && x.ok();
    const long wait = told ? retry_after_ms(retry_after, backoff) : std::min(backoff, kMaxRetryAfterMs);
    say("provider: retrying in " + std::to_string(wait) + " ms" + (told ? " (Retry-After)" : ""));
    if (!sleep_unless_interrupted(wait)) break;
    backoff = std::min(backoff * 2, kMaxRetryAfterMs);
  }
  return fail(ErrorKind::kInterrupted,
              "provider request interrupted by signal " + std::to_string(interrupted_signal()), attempts);
}

}  // namespace lazyagent
