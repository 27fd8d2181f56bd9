// OpenAI-compatible chat completions over HTTP(S), with libcurl.
//
// The planner asks a model for a patch through this client. The contract:
//   - POST {base_url}/chat/completions with "Authorization: Bearer KEY" and a
//     JSON body {model, messages, temperature, response_format?, max_tokens?}.
//   - response_format: json_schema (the request's schema, strict), json_object
//     or none. Local servers (llama.cpp, vLLM, Ollama) turn a JSON schema into
//     a grammar that constrains decoding: with it even a small model's reply
//     has the patch's shape.
//   - Retries: up to max_retries more attempts on 429, 5xx, connection
//     failures and timeouts, waiting backoff_ms, 2x, 4x... or what Retry-After
//     says (at most 60 s). Other statuses fail at once.
//   - A 400 or 422 whose error mentions response_format, json_schema or
//     json_object is retried at once with the next weaker format (json_schema
//     -> json_object -> none; each step once): servers that do not know a
//     format refuse it that way (llama.cpp: "response_format type must be one
//     of \"text\" or \"json_object\""). ChatReply::response_format says which
//     format the accepted reply was asked with, `format_refusals` what was
//     refused on the way.
//   - Every failure is ErrorKind::kPlanner (kUsage for a bad URL/model/key,
//     kInterrupted for SIGINT/SIGTERM) and names the HTTP status and the
//     provider's own message, bounded and escaped, plus the attempt count:
//     "provider said 401: invalid api key (after 1 attempt)".
//   - The API key never appears in an error message or a log line
//     (ARCHITECTURE invariant 7): both go through redact(text, api_key), even
//     when a provider echoes the key back.
//   - A reply body is read up to 8 MiB; a larger one is an error.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/chat_request.h"
#include "util/result.h"

namespace lazyagent {

struct ProviderSettings {
  std::string base_url;  // https://host[:port]/.../v1, see validate_base_url
  std::string model;
  std::string api_key;   // may be empty for local servers that want none
  long connect_timeout_ms = 10000;
  long total_timeout_ms = 120000;  // per attempt
  int max_retries = 3;             // attempts = 1 + max_retries at most
  long backoff_ms = 500;           // first wait between attempts; doubles
};

// Accepts https://HOST[:PORT][/PATH]/v1 (one trailing slash allowed). Plain
// http only when HOST is localhost, 127.0.0.0/8, [::1] or
// host.containers.internal: the key must not cross a network unencrypted.
// Refuses userinfo (https://user:pw@host), queries and fragments; a refused
// URL with userinfo is not echoed, and nothing after '?' ever is.
// Errors are kUsage and say what is accepted.
Status validate_base_url(const std::string& url);
// localhost, [::1] or 127.0.0.0/8 as a strict dotted quad (a URL's host).
bool is_loopback_host(const std::string& host);

// One line per event (attempt, status, retry wait); never the key.
using ProviderLog = std::function<void(const std::string&)>;

// Blocks for at most about (1 + max_retries) * total_timeout_ms plus the
// waits; gives up within about a second of SIGINT/SIGTERM (interrupt.h).
// `attempts_made`, when given, receives the number of HTTP requests sent,
// on success (= ChatReply::attempts) and on failure alike: the task record
// counts them either way.
Result<ChatReply> chat_completion(const ProviderSettings& settings, const ChatRequest& request,
                                  const ProviderLog& log = {}, int* attempts_made = nullptr);

// Pure helpers ---------------------------------------------------------------

// A 2xx body -> content, usage, model. kPlanner errors for malformed bodies:
// "provider reply is not JSON (starts with '<html>')",
// "provider reply has no choices[0].message.content", ...
// (attempts and elapsed_ms are left 0: the caller fills them).
Result<ChatReply> parse_chat_response(const std::string& body);

// The provider's message from a non-2xx body: {"error":{"message":...}},
// {"error":"..."}, {"message":...}, {"detail":...}, else the body as text;
// one line, at most 300 bytes, control characters escaped.
std::string provider_error_text(const std::string& body);

// Every occurrence of `secret` replaced by "[redacted]"; no-op when empty.
std::string redact(const std::string& text, const std::string& secret);

// Retry-After as delta-seconds ("7") or HTTP-date; fallback_ms when absent or
// unparsable. Never negative, never more than 60 s.
long retry_after_ms(const std::string& header_value, long fallback_ms);

}  // namespace lazyagent
