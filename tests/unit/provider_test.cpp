// The provider client against a real ProviderStub on a loopback ephemeral port
// (no mocks, STYLE.md principle 7), and the pure helpers of both.
#include "catch_compat.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/interrupt.h"
#include "provider/provider_client.h"
#include "provider/provider_stub.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

const std::string kKey = "sk-test-SECRET-0123456789";

struct Served {
  ProviderStub stub;
  int port = 0;
  explicit Served(std::vector<StubReply> replies, StubObserver observer = {})
      : stub(StubScript{kKey, std::move(replies)}) {
    stub.set_observer(std::move(observer));
    auto p = stub.listen("127.0.0.1", 0);
    REQUIRE(p.ok());
    port = *p;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
};

StubReply reply(int status, std::string content) {
  StubReply r;
  r.status = status;
  r.content = std::move(content);
  return r;
}

ProviderSettings settings(const std::string& url) {
  ProviderSettings s;
  s.base_url = url;
  s.model = "test-model";
  s.api_key = kKey;
  s.connect_timeout_ms = 2000;
  s.total_timeout_ms = 5000;
  s.backoff_ms = 10;
  return s;
}

ChatRequest ask(const std::string& text) {
  ChatRequest r;
  r.messages = {{"system", "You write patches."}, {"user", text}};
  return r;
}

// Collects log lines; none may hold the key (ARCHITECTURE invariant 7).
struct Log {
  std::vector<std::string> lines;
  ~Log() {
    for (const auto& l : lines) CHECK(l.find(kKey) == std::string::npos);
  }
  ProviderLog fn() {
    return [this](const std::string& l) { lines.push_back(l); };
  }
  bool has(const std::string& part) const {
    return std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return l.find(part) != std::string::npos; });
  }
};

// The message of a failed call, after checking its kind and that the key is not in it.
std::string failure(const Result<ChatReply>& r, ErrorKind kind = ErrorKind::kPlanner) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == kind);
  CHECK(r.error().message.find(kKey) == std::string::npos);
  return r.error().message;
}

long ms_since(std::chrono::steady_clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - t).count());
}

size_t append(char* d, size_t s, size_t n, void* out) {
  static_cast<std::string*>(out)->append(d, s * n);
  return s * n;
}

// A plain request to the stub, for its endpoints other than the client's.
std::pair<long, std::string> http(const std::string& method, const std::string& url,
                                  const std::string& body, const std::string& key) {
  CURL* c = curl_easy_init();
  std::string got;
  curl_slist* h = key.empty() ? nullptr : curl_slist_append(nullptr, ("Authorization: Bearer " + key).c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return {status, got};
}

}  // namespace

TEST_CASE("a reply carries content, usage, model and the request we sent", "[provider]") {
  StubReply ok = reply(200, R"({"files":[]})");
  ok.usage = {1, 2, 3};
  Served s({ok});
  Log log;
  auto r = chat_completion(settings(s.url()), ask("fix add"), log.fn());
  REQUIRE(r.ok());
  CHECK(r->content == R"({"files":[]})");
  CHECK((r->usage.prompt_tokens == 1 && r->usage.completion_tokens == 2 && r->usage.total_tokens == 3));
  CHECK(r->model == "test-model");
  CHECK(r->finish_reason == "stop");
  CHECK(r->attempts == 1);
  CHECK(r->response_format == ResponseFormat::kJsonObject);
  CHECK(r->format_refusals.empty());
  CHECK(log.has("attempt 1: POST " + s.url() + "/chat/completions (model test-model, json_object)"));

  ChatRequest plain = ask("again");
  plain.response_format = ResponseFormat::kNone;
  plain.max_tokens = 100;
  REQUIRE(chat_completion(settings(s.url() + "/"), plain).ok());

  const auto bodies = s.stub.request_log();
  REQUIRE(bodies.size() == 2);
  const json first = json::parse(bodies[0]);
  CHECK(first["model"] == "test-model");
  CHECK(first["messages"][1] == json({{"role", "user"}, {"content", "fix add"}}));
  CHECK(first["response_format"] == json({{"type", "json_object"}}));
  CHECK(first["temperature"] == 0.0);
  CHECK_FALSE(first.contains("max_tokens"));
  const json second = json::parse(bodies[1]);
  CHECK_FALSE(second.contains("response_format"));
  CHECK(second["max_tokens"] == 100);
}

TEST_CASE("a wrong key is a 401 with the provider's words, not retried", "[provider]") {
  Served s({reply(200, "unused")});
  ProviderSettings wrong = settings(s.url());
  wrong.api_key = "sk-wrong-key-42";
  Log log;
  CHECK(failure(chat_completion(wrong, ask("x"), log.fn())) == "provider said 401: invalid api key (after 1 attempt)");
  CHECK(s.stub.requests() == 1);
  CHECK_FALSE(log.has("sk-wrong-key-42"));
}

TEST_CASE("a key the provider echoes back is redacted", "[provider]") {
  Served s({reply(403, "Incorrect API key provided: " + kKey + ".")});
  Log log;
  CHECK(failure(chat_completion(settings(s.url()), ask("x"), log.fn())) ==
        "provider said 403: Incorrect API key provided: [redacted]. (after 1 attempt)");
  CHECK(log.has("[redacted]"));
  for (const auto& b : s.stub.request_log()) CHECK(b.find(kKey) == std::string::npos);
}

TEST_CASE("429 with Retry-After waits as told, then succeeds", "[provider]") {
  StubReply busy = reply(429, "slow down");
  busy.retry_after = "1";
  Served s({busy, reply(200, "done")});
  Log log;
  auto r = chat_completion(settings(s.url()), ask("x"), log.fn());
  REQUIRE(r.ok());
  CHECK(r->content == "done");
  CHECK(r->attempts == 2);
  CHECK(r->elapsed_ms >= 950);
  CHECK(log.has("provider said 429: slow down"));
  CHECK(log.has("retrying in 1000 ms (Retry-After)"));
}

TEST_CASE("5xx is retried with a doubling backoff until the retries run out", "[provider]") {
  Served s({reply(500, "overloaded")});
  ProviderSettings st = settings(s.url());
  st.max_retries = 2;
  Log log;
  int attempts = 0;  // counted on a failure too (the task record's `attempts`)
  CHECK(failure(chat_completion(st, ask("x"), log.fn(), &attempts)) == "provider said 500: overloaded (after 3 attempts)");
  CHECK(attempts == 3);
  CHECK(s.stub.requests() == 3);
  CHECK(log.has("retrying in 10 ms"));
  CHECK(log.has("retrying in 20 ms"));

  StubReply text;
  text.status = 503;
  text.raw_body = "upstream connect error\x1b[31m\nreset";
  Served plain({text});
  st = settings(plain.url());
  st.max_retries = 0;
  CHECK(failure(chat_completion(st, ask("x"))) ==
        "provider said 503: upstream connect error\\x1b[31m reset (after 1 attempt)");
}

TEST_CASE("a reply slower than total_timeout_ms is a timeout per attempt", "[provider]") {
  StubReply slow = reply(200, "late");
  slow.delay_ms = 3000;
  Served s({slow});
  ProviderSettings st = settings(s.url());
  st.total_timeout_ms = 300;
  st.max_retries = 1;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(failure(chat_completion(st, ask("x"))) == "provider did not answer within 300 ms (after 2 attempts)");
  CHECK(ms_since(t0) < 2000);

  Served reused({reply(500, "blip"), slow});  // the second attempt reuses the connection
  st.base_url = reused.url();
  CHECK(failure(chat_completion(st, ask("x"))) == "provider did not answer within 300 ms (after 2 attempts)");
}

TEST_CASE("a refused connection is retried and named", "[provider]") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);  // nothing listens there now
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v1";
  ProviderSettings st = settings(url);
  st.max_retries = 1;
  CHECK(failure(chat_completion(st, ask("x"))) ==
        "cannot connect to the provider at " + url + ": Connection refused (after 2 attempts)");
}

TEST_CASE("a malformed 200 body is a clear error and is not retried", "[provider]") {
  StubReply html, empty;
  html.raw_body = "<html>oops</html>";
  empty.raw_body = R"({"choices":[]})";
  Served s({html, empty});
  CHECK(failure(chat_completion(settings(s.url()), ask("x"))) ==
        "provider reply is not JSON (starts with '<html>oops</html>') (after 1 attempt)");
  CHECK(failure(chat_completion(settings(s.url()), ask("x"))) ==
        "provider reply has no choices[0].message.content (after 1 attempt)");
  CHECK(s.stub.requests() == 2);
}

TEST_CASE("a 400 about response_format is retried once without it", "[provider]") {
  StubReply no_json = reply(400, "response_format json_object is not supported by this model");
  no_json.match = "json_object";
  Served s({no_json, reply(200, "fine")});
  Log log;
  auto r = chat_completion(settings(s.url()), ask("x"), log.fn());
  REQUIRE(r.ok());
  CHECK(r->content == "fine");
  CHECK(r->attempts == 2);
  CHECK(r->response_format == ResponseFormat::kNone);
  CHECK(r->format_refusals ==
        std::vector<std::string>{"json_object: response_format json_object is not supported by this model"});
  const auto bodies = s.stub.request_log();
  REQUIRE(bodies.size() == 2);
  CHECK(json::parse(bodies[0]).contains("response_format"));
  CHECK_FALSE(json::parse(bodies[1]).contains("response_format"));
  CHECK(log.has("retrying at once without it"));

  Served other({reply(400, "messages: too long")});
  CHECK(failure(chat_completion(settings(other.url()), ask("x"))) ==
        "provider said 400: messages: too long (after 1 attempt)");
}

TEST_CASE("json_schema is sent strict, and each refused format steps down once", "[provider]") {
  ChatRequest req = ask("x");
  req.response_format = ResponseFormat::kJsonSchema;
  req.json_schema = {{"name", "patch"}, {"schema", {{"type", "object"}}}};

  SECTION("accepted") {
    Served s({reply(200, "{}")});
    auto r = chat_completion(settings(s.url()), req);
    REQUIRE(r.ok());
    CHECK(r->response_format == ResponseFormat::kJsonSchema);
    const json body = json::parse(s.stub.request_log().at(0));
    CHECK(body["response_format"] ==
          json({{"type", "json_schema"},
                {"json_schema", {{"name", "patch"}, {"schema", {{"type", "object"}}}, {"strict", true}}}}));
  }
  SECTION("json_schema refused (llama.cpp's words before it knew the type), then json_object accepted") {
    // The body a llama-server gives for a response_format type it does not know
    // (captured from build b11669 with type "xml"; older builds said so for json_schema).
    StubReply refused;
    refused.match = "\"json_schema\"";
    refused.status = 400;
    refused.raw_body = R"({"error":{"code":400,"message":"response_format type must be one of \"text\" or \"json_object\", but got: json_schema","type":"invalid_request_error"}})";
    Served s({refused, reply(200, "{}")});
    Log log;
    auto r = chat_completion(settings(s.url()), req, log.fn());
    REQUIRE(r.ok());
    CHECK(r->response_format == ResponseFormat::kJsonObject);
    CHECK(r->attempts == 2);
    REQUIRE(r->format_refusals.size() == 1);
    CHECK(r->format_refusals[0] ==
          "json_schema: response_format type must be one of \"text\" or \"json_object\", but got: json_schema");
    CHECK(log.has("HTTP 400 about response_format json_schema; retrying at once with json_object"));
    const auto bodies = s.stub.request_log();
    REQUIRE(bodies.size() == 2);
    CHECK(json::parse(bodies[1])["response_format"] == json({{"type", "json_object"}}));
  }
  SECTION("both refused (a 422 too): the third request has no response_format") {
    StubReply no_schema = reply(422, "json_schema: unsupported for key " + kKey);  // a provider echoing the key
    no_schema.match = "\"json_schema\"";
    StubReply no_object = reply(400, "response_format is not supported");
    no_object.match = "json_object";
    Served s({no_schema, no_object, reply(200, "{}")});
    auto r = chat_completion(settings(s.url()), req);
    REQUIRE(r.ok());
    CHECK(r->response_format == ResponseFormat::kNone);
    CHECK(r->attempts == 3);
    REQUIRE(r->format_refusals.size() == 2);
    CHECK(r->format_refusals[0] == "json_schema: json_schema: unsupported for key [redacted]");
    CHECK_FALSE(json::parse(s.stub.request_log().at(2)).contains("response_format"));
  }
  SECTION("a request without a schema falls back to json_object at once") {
    req.json_schema = nullptr;
    Served s({reply(200, "{}")});
    auto r = chat_completion(settings(s.url()), req);
    REQUIRE(r.ok());
    CHECK(r->response_format == ResponseFormat::kJsonObject);
  }
}

TEST_CASE("response format names round-trip", "[provider]") {
  for (ResponseFormat f : {ResponseFormat::kJsonSchema, ResponseFormat::kJsonObject, ResponseFormat::kNone}) {
    CHECK(parse_response_format(response_format_name(f)) == f);
  }
  CHECK_FALSE(parse_response_format("json").has_value());
}

// A real signal, delivered to this thread by another one after `after_ms`,
// through the CLI's own handlers (restored afterwards).
struct SignalSoon {
  struct sigaction old[3] {};
  std::thread sender;
  SignalSoon(int sig, long after_ms) {
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; ++i) sigaction(sigs[i], nullptr, &old[i]);
    install_interrupt_handlers();
    sender = std::thread([target = pthread_self(), sig, after_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
      pthread_kill(target, sig);
    });
  }
  ~SignalSoon() {
    sender.join();
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; ++i) sigaction(sigs[i], &old[i], nullptr);
    set_interrupted_for_test(0);
  }
};

TEST_CASE("SIGINT aborts a transfer, SIGTERM a backoff", "[provider]") {
  StubReply slow = reply(200, "late");
  slow.delay_ms = 5000;
  Served s({slow});
  const auto t0 = std::chrono::steady_clock::now();
  Result<ChatReply> r = Error{};
  {
    SignalSoon ctrl_c(SIGINT, 100);
    r = chat_completion(settings(s.url()), ask("x"));
  }
  CHECK(failure(r, ErrorKind::kInterrupted) == "provider request interrupted by signal 2 (after 1 attempt)");
  CHECK(ms_since(t0) < 2500);

  Served failing({reply(503, "busy")});
  ProviderSettings st = settings(failing.url());
  st.backoff_ms = 5000;
  const auto t1 = std::chrono::steady_clock::now();
  SignalSoon term(SIGTERM, 100);
  CHECK(failure(chat_completion(st, ask("x")), ErrorKind::kInterrupted) ==
        "provider request interrupted by signal 15 (after 1 attempt)");
  CHECK(ms_since(t1) < 1000);
  CHECK(failing.stub.requests() == 1);

  failure(chat_completion(st, ask("x")), ErrorKind::kInterrupted);  // still pending: no request
  CHECK(failing.stub.requests() == 1);
}

TEST_CASE("base URLs: https anywhere, plain http only to this host", "[provider]") {
  for (const char* ok : {"https://api.openai.com/v1", "https://api.openai.com/v1/", "https://h:8443/openai/v1",
                         "http://localhost:8000/v1", "http://127.5.6.7/v1", "http://[::1]:1/v1",
                         "http://host.containers.internal:1/v1", "HTTP://LOCALHOST/v1"}) {
    INFO(ok);
    CHECK(validate_base_url(ok).ok());
  }
  const std::string accepted = "; expected https://HOST[:PORT][/PATH]/v1, or http:// only for localhost, "
                               "127.0.0.0/8, [::1] or host.containers.internal";
  auto msg = [](const std::string& url) { return validate_base_url(url).error().message; };
  CHECK(validate_base_url("http://example.com/v1").error().kind == ErrorKind::kUsage);
  CHECK(msg("http://example.com/v1") == "provider URL 'http://example.com/v1' uses plain http for a host that is "
                                        "not local (the API key would cross the network unencrypted)" + accepted);
  CHECK(msg("ftp://example.com/v1") == "provider URL 'ftp://example.com/v1' has an unsupported scheme" + accepted);
  CHECK(msg("https://example.com/api") == "provider URL 'https://example.com/api' does not end with /v1" + accepted);
  CHECK(msg("https://user:pw@example.com/v1") ==
        "provider URL contains user:password@ (give the API key separately, never in the URL)" + accepted);
  CHECK(msg("https://example.com/v1?key=sk-1") ==
        "provider URL 'https://example.com/v1' has a query or fragment" + accepted);
  CHECK(msg("") == "provider URL is empty" + accepted);
  for (const char* bad : {"example.com/v1", "http://127.0.0.1.evil.com/v1", "http://127.1/v1", "http://0x7f000001/v1",
                          "https://h:0/v1", "https://h:99999/v1", "https://h:x/v1", "https:///v1", "https://::1/v1",
                          "https://h/v1 ", "http://[::2]/v1", "https://h/v2",
                          "https://h<x>/v1", "https://[::g]/v1", "https://[::1/v1"}) {
    INFO(bad);
    CHECK_FALSE(validate_base_url(bad).ok());
  }
  failure(chat_completion(settings("https://user:" + kKey + "@example.com/v1"), ask("x")), ErrorKind::kUsage);
}

TEST_CASE("parse_chat_response reads the OpenAI shape and names what is missing", "[provider]") {
  auto r = parse_chat_response(R"({"model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"length"}],
                                   "usage":{"prompt_tokens":5,"completion_tokens":-1,"total_tokens":"x"}})");
  REQUIRE(r.ok());
  CHECK(r->content == "hi");
  CHECK(r->model == "m");
  CHECK(r->finish_reason == "length");
  CHECK((r->usage.prompt_tokens == 5 && r->usage.completion_tokens == 0 && r->usage.total_tokens == 0));
  CHECK(parse_chat_response(R"({"choices":[{"message":{"content":"x"}}]})")->usage.total_tokens == 0);
  auto err = [](const std::string& body) { return parse_chat_response(body).error().message; };
  CHECK(err("") == "provider reply is not JSON (starts with '')");
  CHECK(err("[1]") == "provider reply is not a JSON object");
  CHECK(err("{}") == "provider reply has no choices[0].message.content");
  CHECK(err(R"({"choices":[{"message":{"content":null}}]})") == "provider reply has no choices[0].message.content");
  CHECK(err(R"({"choices":[{"message":{"content":null,"refusal":"no"}}]})") == "the model refused: no");
  CHECK(err(R"({"error":{"message":"quota exceeded"}})") ==
        "provider reply has no choices but an error: quota exceeded");
  CHECK(parse_chat_response("{}").error().kind == ErrorKind::kPlanner);
}

TEST_CASE("provider_error_text finds the message in the usual shapes", "[provider]") {
  CHECK(provider_error_text(R"({"error":{"message":"bad model","type":"x"}})") == "bad model");
  CHECK(provider_error_text(R"({"error":"rate limited"})") == "rate limited");
  CHECK(provider_error_text(R"({"detail":"Not Found"})") == "Not Found");
  CHECK(provider_error_text("Bad Gateway\r\n") == "Bad Gateway");
  CHECK(provider_error_text("") == "(empty reply)");
  CHECK(provider_error_text(std::string(400, 'a')) == std::string(300, 'a') + "...");
}

TEST_CASE("stub scripts: every problem is named with its path", "[provider]") {
  auto s = parse_stub_script(R"({"api_key":"k","replies":[{"match":"T","status":429,"content":"c",
      "delay_ms":5,"retry_after":2,"usage":{"prompt_tokens":1,"completion_tokens":2}},{}]})");
  REQUIRE(s.ok());
  CHECK(s->api_key == "k");
  REQUIRE(s->replies.size() == 2);
  CHECK(s->replies[0].match == "T");
  CHECK(s->replies[0].status == 429);
  CHECK(s->replies[0].delay_ms == 5);
  CHECK(s->replies[0].retry_after == "2");
  CHECK(s->replies[0].usage.total_tokens == 3);
  CHECK(s->replies[1].status == 200);
  CHECK(s->replies[1].usage.total_tokens == 46);
  auto err = [](const std::string& text) { return parse_stub_script(text).error().message; };
  CHECK(err("{") .rfind("stub script is not JSON: ", 0) == 0);
  CHECK(err("[]") == "stub script must be a JSON object with \"replies\"");
  CHECK(err(R"({"replies":[]})") == "stub script: replies: must be a non-empty array of replies");
  CHECK(err(R"({"key":"k","replies":[{"stauts":500,"status":"500","usage":{"tokens":1}},3]})") ==
        "stub script: key: unknown key (known: api_key, replies); "
        "replies[0].stauts: unknown key (known: match, status, content, raw_body, delay_ms, retry_after, usage, require, require_last, tool_calls); "
        "replies[0].status: must be an integer from 100 to 599; "
        "replies[0].usage.tokens: unknown key (known: prompt_tokens, completion_tokens, total_tokens); "
        "replies[1]: must be an object");
  CHECK(parse_stub_script("[]").error().kind == ErrorKind::kUsage);
}

TEST_CASE("redact replaces every occurrence of the secret", "[provider]") {
  CHECK(redact("key sk-1 and sk-1!", "sk-1") == "key [redacted] and [redacted]!");
  CHECK(redact("sk-1", "sk-1") == "[redacted]");
  CHECK(redact("nothing here", "sk-1") == "nothing here");
  CHECK(redact("anything", "") == "anything");
}

TEST_CASE("retry_after_ms reads seconds and HTTP dates, capped at 60 s", "[provider]") {
  CHECK(retry_after_ms("7", 500) == 7000);
  CHECK(retry_after_ms(" 2 \r\n", 500) == 2000);
  CHECK(retry_after_ms("0", 500) == 0);
  CHECK(retry_after_ms("120", 500) == 60000);
  CHECK(retry_after_ms("99999999999999", 500) == 60000);
  CHECK(retry_after_ms("", 500) == 500);
  CHECK(retry_after_ms("soon", 500) == 500);
  CHECK(retry_after_ms("-3", 500) == 500);
  CHECK(retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 500) == 0);
  CHECK(retry_after_ms("Fri, 01 Jan 2100 00:00:00 GMT", 500) == 60000);
  CHECK(retry_after_ms("", 90000) == 60000);
}

TEST_CASE("the stub serves models, 404s, both paths and a tagged reply first", "[provider]") {
  StubReply tagged = reply(200, "tagged");
  tagged.match = "TAG-B";
  std::vector<StubRequest> seen;
  std::mutex mu;
  Served s({tagged, reply(200, "first"), reply(200, "second")}, [&](const StubRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
  });
  const std::string root = "http://127.0.0.1:" + std::to_string(s.port);
  CHECK(chat_completion(settings(s.url()), ask("x"))->content == "first");
  CHECK(chat_completion(settings(s.url()), ask("TAG-B"))->content == "tagged");
  CHECK(chat_completion(settings(root + "/v1"), ask("y"))->content == "second");
  CHECK(chat_completion(settings(s.url()), ask("z"))->content == "second");

  const auto models = http("GET", s.url() + "/models", "", kKey);
  CHECK(models.first == 200);
  CHECK(json::parse(models.second)["data"][0]["id"] == "lazyagent-stub");
  CHECK(http("GET", s.url() + "/models", "", "").first == 401);
  const auto missing = http("GET", root + "/nope", "", kKey);
  CHECK(missing.first == 404);
  CHECK(json::parse(missing.second)["error"]["message"] == "no such endpoint: GET /nope");
  const auto short_path = http("POST", root + "/chat/completions", R"({"messages":[]})", kKey);
  CHECK(short_path.first == 200);
  CHECK(json::parse(short_path.second)["object"] == "chat.completion");
  CHECK(http("POST", s.url() + "/chat/completions", "not json", kKey).first == 400);
  ProviderStub second(StubScript{});
  CHECK(second.listen("127.0.0.1", s.port).error().message ==
        "cannot listen on 127.0.0.1:" + std::to_string(s.port) + " (port in use, or not an address of this host)");

  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(seen.size() == 4 + 5);
  CHECK(seen[1].reply_index == 0);
  CHECK(seen[1].status == 200);
  CHECK(seen[1].path == "/v1/chat/completions");
  CHECK(seen[6].status == 404);
  for (const auto& r : seen) CHECK(r.body.find(kKey) == std::string::npos);
}
