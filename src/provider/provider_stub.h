// A scripted OpenAI-compatible server: the project's stand-in for a real
// provider in the demo and the tests. It is not a model: it answers with the
// replies of a script, in order or by a tag found in the request.
//
// Endpoints (cpp-httplib, one background thread plus its worker pool):
//   POST /v1/chat/completions (also /chat/completions)
//     - Authorization must be "Bearer <api_key>" when the script has a key,
//       else 401 {"error":{"message":"invalid api key",...}};
//     - a body that is not a JSON object with a "messages" array: 400;
//     - otherwise the reply is the first one whose non-empty `match` occurs in
//       the request body, else the next in-order reply (match ""); once those
//       are used up the last in-order reply repeats;
//     - a reply with `require` answers 400 {"error":{"message":"provider stub:
//       the request lacks required text: ..."}} unless every required string
//       occurs in the request's messages (their decoded text), e.g. a fixing
//       reply that needs the previous attempt's failure output;
//     - it waits delay_ms, then answers `status` with a chat.completion body
//       (2xx) or {"error":{"message":content}} (others), or raw_body verbatim
//       when set; Retry-After is sent when given.
//   GET /v1/models (also /models): one model, "lazyagent-stub" (same key check).
//   Anything else: 404 {"error":{"message":"no such endpoint: ..."}}.
// The Authorization header is never recorded or logged.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "provider/provider_client.h"
#include "util/result.h"

namespace lazyagent {

struct StubReply {
  std::string match;  // "" = in order; else chosen when this tag occurs in the request body
  int status = 200;
  std::string content;
  std::string raw_body;  // sent verbatim instead of a chat response when non-empty
  long delay_ms = 0;
  std::string retry_after;
  TokenUsage usage{12, 34, 46};
  std::vector<std::string> require;  // each must occur in the request's messages, else 400
  // Each must occur in the last message (a tool result, in a tool loop), else 400.
  std::vector<std::string> require_last;
  // Replied as choices[0].message.tool_calls (content null, finish_reason
  // tool_calls): [{"name": ..., "arguments": {...} or "..."}]; ids call_<reply>_<i>.
  nlohmann::json tool_calls;
};

struct StubScript {
  std::string api_key;  // "" = any Authorization (or none) is accepted
  std::vector<StubReply> replies;
};

// {"api_key": "...", "replies": [{"match", "status", "content", "raw_body",
//  "delay_ms", "retry_after", "require": "..." or ["...", ...], "require_last": the same,
//  "tool_calls": [{"name", "arguments"}], "usage": {"prompt_tokens", "completion_tokens",
//  "total_tokens"}}]}. Every problem is reported (joined by "; "), each with
// its path: "replies[1].stauts: unknown key". Errors are kUsage.
Result<StubScript> parse_stub_script(const std::string& json_text);

// What one request got, for a request log (never the Authorization header).
struct StubRequest {
  std::string method, path;
  int status = 0;
  int reply_index = -1;  // index into StubScript::replies; -1 when none was used
  std::string body;
};
// Called from the server's worker threads, possibly concurrently.
using StubObserver = std::function<void(const StubRequest&)>;

class ProviderStub {
 public:
  explicit ProviderStub(StubScript script);
  ~ProviderStub();  // stop()s
  ProviderStub(const ProviderStub&) = delete;
  ProviderStub& operator=(const ProviderStub&) = delete;

  // Before listen(): called once per request, after it was answered.
  void set_observer(StubObserver observer);
  // Binds host:port (0 = an ephemeral port) and serves in a background thread.
  // Returns the bound port. Errors are kUsage (the address is the user's choice).
  Result<int> listen(const std::string& host, int port);
  // Stops serving; in-flight delays end within ~10 ms with a 503. Idempotent.
  void stop();

  // Chat-completion requests received, whatever their outcome.
  long requests() const;
  // Their bodies, in arrival order (the last 1000).
  std::vector<std::string> request_log() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `lazyagent-oci provider-stub --script FILE [--listen HOST:PORT] [--log FILE]`
// (src/cli/cmd_provider_stub.cpp).
int cmd_provider_stub(const std::vector<std::string>& args);

}  // namespace lazyagent
