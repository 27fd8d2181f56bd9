// The provider client against a real OpenAI-compatible server: llama.cpp's
// llama-server (scripts/llama-server.sh, images/llama/), serving a tiny
// random-weights model written at test time. Through `lazyagent-oci run` and
// the real planner container, like a user's local model server; plus raw
// requests for what the planner does not use yet (tool calls).
//
// The model's words are noise; what is real is the protocol: usage counts,
// finish reasons, response_format grammars, the server's error bodies, tool
// calls. Every server is a container removed by the fixture's destructor, and
// by `llama-server.sh reap` (owner pid gone) or its lifetime otherwise.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "sk-lazyagent-llama-0123456789abcdef";

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One llama-server container for this test, removed in the destructor.
class LlamaServer {
 public:
  explicit LlamaServer(const std::string& tmpl = "chatml", const std::vector<std::string>& server_args = {},
                       pid_t owner = getpid()) {
    std::string cmd = std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/llama-server.sh start --json --owner-pid " +
                      std::to_string(owner) + " --lifetime 900 --template " + quoted(tmpl);
    for (const auto& a : server_args) cmd += " --server-arg " + quoted(a);
    const std::string out = sh(cmd + " 2>&1");  // the JSON is the last line; reap notes may come first
    const std::size_t at = out.rfind("\n{");
    info_ = json::parse(at == std::string::npos ? out : out.substr(at + 1), nullptr, false);
    INFO("llama-server.sh start said: " << out);
    REQUIRE(info_.is_object());
    REQUIRE(info_.contains("name"));
  }
  ~LlamaServer() {
    sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/llama-server.sh stop " + name() + " >/dev/null 2>&1");
  }
  LlamaServer(const LlamaServer&) = delete;
  std::string name() const { return info_["name"]; }
  std::string container_url() const { return info_["container_base_url"]; }
  std::string host_url() const { return info_["host_base_url"]; }
  std::string logs() const { return sh("podman logs " + name() + " 2>&1 | tail -n 40"); }
  json props() const {
    const std::string base = host_url().substr(0, host_url().size() - 3);  // without /v1
    return json::parse(sh("curl -s --max-time 10 " + base + "/props"), nullptr, false);
  }

  // A raw POST to /v1/chat/completions from the host: {status, body}.
  std::pair<int, json> chat(const json& body) const {
    TempDir d;
    const std::string req = d.file("req.json", body.dump());
    const std::string out = sh("curl -s -o " + d.path() + "/resp.json -w '%{http_code}' -H 'Content-Type: application/json' "
                               "--max-time 120 --data-binary @" + req + " " + host_url() + "/chat/completions");
    std::ifstream f(d.path() + "/resp.json");
    std::stringstream ss;
    ss << f.rdbuf();
    return {std::atoi(out.c_str()), json::parse(ss.str(), nullptr, false)};
  }

 private:
  json info_;
};

// Podman secrets (unique names) pointing the planner at the server, and a
// config naming them; all removed in the destructor.
class Configured {
 public:
  Configured(const LlamaServer& server, const std::string& extra_yaml, const std::string& key = kKey) {
    const std::string prefix = "LAZYAGENT_LLAMA_" + std::to_string(getpid()) + "_" + std::to_string(++counter_);
    names_ = {prefix + "_BASE_URL", prefix + "_MODEL", prefix + "_API_KEY"};
    // The planner image must hold this binary: LAZYAGENT_IT_PLANNER_IMAGE
    // names one (default localhost/lazyagent-planner:latest, which
    // scripts/build-images.sh rebuilds from build/lazyagent-oci).
    const char* image = std::getenv("LAZYAGENT_IT_PLANNER_IMAGE");
    const std::string planner = image && *image ? image : "localhost/lazyagent-planner:latest";
    config_ = dir_.file("config.yaml", "seed: " + seed_dir() + "\nimages:\n  planner: " + planner +
                                           "\nprovider:\n  secrets:\n    base_url: " + names_[0] +
                                           "\n    model: " + names_[1] + "\n    api_key: " + names_[2] +
                                           "\n  max_retries: 1\n" + extra_yaml);
    CliResult r = run_cli({state.path(), {{names_[0], server.container_url()}, {names_[1], "lazyagent-tiny"}, {names_[2], key}}},
                          {"configure", "--config", config_});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  ~Configured() {
    for (const auto& n : names_) sh("podman secret rm " + n + " >/dev/null 2>&1");
  }
  CliResult run() { return run_cli({state.path()}, {"run", "--config", config_, "--json", "--no-baseline"}); }
  json record(const std::string& run_id) const {
    std::ifstream f(state.path() + "/lazyagent-oci/runs/" + run_id + ".json");
    std::stringstream ss;
    ss << f.rdbuf();
    return json::parse(ss.str(), nullptr, false);
  }
  TempDir state;

 private:
  static inline int counter_ = 0;
  TempDir dir_;
  std::vector<std::string> names_;
  std::string config_;
};

json parse_result(const CliResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  return j;
}

// The run's own containers (planner, sandbox) are gone.
bool run_containers_gone(const json& result) {
  return containers_with_label("io.lazyagent.run=" + result.value("run_id", std::string("none"))).empty();
}

void check_real_usage(const json& usage) {
  INFO(usage.dump());
  CHECK(usage["prompt_tokens"].get<long>() > 100);  // the prompt carries the seed's files
  CHECK(usage["completion_tokens"].get<long>() > 0);
  CHECK(usage["total_tokens"].get<long>() ==
        usage["prompt_tokens"].get<long>() + usage["completion_tokens"].get<long>());
}

// A raw request with one read_file tool and tool_choice "required".
json tool_request() {
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "read_file",
      "description": "Read a file of the project",
      "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}])");
  return {{"model", "lazyagent-tiny"},
          {"messages", {{{"role", "user"}, {"content", "Read calculator.py"}}}},
          {"tools", tools},
          {"tool_choice", "required"},
          {"temperature", 0},
          {"max_tokens", 200}};
}

// Why a reply that is not of the patch's shape is refused.
const std::set<std::string> kShapeCodes = {"no_patch", "malformed_json", "unknown_format", "bad_shape", "no_files",
                                           "duplicate_key"};

// Contract codes a schema-shaped patch can still earn (content and size
// rules); never a shape code: the grammar made the shape.
const std::set<std::string> kContentCodes = {"control_char_in_content", "invalid_utf8", "too_large", "duplicate_path",
                                             "too_many_files", "secret_in_content"};

}  // namespace

TEST_CASE("replies without a schema are no patch: exit 4 with the refusal, no sandbox, and chatml ignores tools", "[llama]") {
  LlamaServer server;  // one server for all of it (a SECTION would start it again)
  {  // response_format none: a plain completion
    Configured c(server, "  response_format: none\n");
    CliResult r = c.run();
    json j = parse_result(r);
    INFO(r.err << server.logs());
    CHECK(r.exit_code == 4);
    CHECK(j["sandbox_id"] == "");
    CHECK(r.err.find("==> create") == std::string::npos);
    REQUIRE_FALSE(j["findings"].empty());
    // Noise up to the server's token cap (-n 512): no JSON object, or one
    // that never closes.
    CHECK(j["planner"]["finish_reason"] == "length");
    CHECK(kShapeCodes.count(j["findings"][0]["code"].get<std::string>()) == 1);
    CHECK(j["planner"]["response_format"] == "none");
    CHECK(j["planner"]["provider_model"] == "lazyagent-tiny");  // the server's --alias, in its reply
    check_real_usage(j["usage"]);
    CHECK(run_containers_gone(j));
  }
  {  // response_format json_object: a JSON object, but not of the patch's shape
    Configured c(server, "  response_format: json_object\n");
    CliResult r = c.run();
    json j = parse_result(r);
    INFO(r.err << server.logs());
    CHECK(r.exit_code == 4);
    CHECK(j["sandbox_id"] == "");
    CHECK(j["planner"]["response_format"] == "json_object");
    REQUIRE_FALSE(j["findings"].empty());
    CHECK(kShapeCodes.count(j["findings"][0]["code"].get<std::string>()) == 1);
    CHECK(j["planner"]["finish_reason"] == "stop");
    CHECK(run_containers_gone(j));
  }
  {
    // chatml has no tool calls: llama-server ignores tools and tool_choice
    // "required" without an error, and the reply is plain text.
    CHECK(server.props()["chat_template_caps"]["supports_tool_calls"] == false);
    auto [status, reply] = server.chat(tool_request());
    INFO(reply.dump());
    REQUIRE(status == 200);
    CHECK(reply["choices"][0]["finish_reason"] == "length");
    CHECK_FALSE(reply["choices"][0]["message"].contains("tool_calls"));
  }
}

TEST_CASE("json_schema makes the reply a patch object that reaches the contract and the sandbox", "[llama]") {
  LlamaServer server;
  Configured c(server, "");
  CliResult r = c.run();
  json j = parse_result(r);
  INFO(r.err << server.logs());
  CHECK(j["planner"]["response_format"] == "json_schema");
  CHECK(j["planner"]["response_format_refusals"].empty());
  CHECK(j["planner"]["finish_reason"] == "stop");
  check_real_usage(j["usage"]);
  const json rec = c.record(j["run_id"]);
  REQUIRE(rec.is_object());
  if (r.exit_code == 4) {
    // Refused by the contract (e.g. a control character the random model
    // escaped into the content), never for its shape.
    CHECK(j["sandbox_id"] == "");
    REQUIRE_FALSE(j["findings"].empty());
    for (const auto& f : j["findings"]) CHECK(kContentCodes.count(f["code"].get<std::string>()) == 1);
    CHECK(rec["status"] == "refused");
  } else {
    // The patch (random content for calculator.py) ran in the sandbox and
    // the tests failed.
    CHECK(r.exit_code == 1);
    CHECK(j["tests_passed"] == false);
    CHECK(j["changed_paths"] == json::array({"calculator.py"}));
    CHECK(j["sandbox_id"].get<std::string>().size() == 64);
    CHECK(j["test_exit_code"] != 0);
    CHECK(rec["status"] == "failed");
    CHECK(rec["tests_passed"] == false);
    CHECK(rec["sandbox_id"] == j["sandbox_id"]);
    CHECK(rec["reason"].get<std::string>().rfind("tests failed: ", 0) == 0);
  }
  CHECK(rec["planner"]["response_format"] == "json_schema");
  CHECK(rec["planner"]["usage"] == j["usage"]);
  CHECK(run_containers_gone(j));
}

TEST_CASE("the server's own error bodies reach the user: 401 and a prompt over the context, exit 3, no sandbox", "[llama]") {
  LlamaServer server("chatml", {"--api-key", kKey, "-c", "256"});
  {  // a wrong key
    Configured c(server, "", "sk-not-the-server-key-000000");
    CliResult r = c.run();
    json j = parse_result(r);
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(j["error"].get<std::string>().find("provider said 401: Invalid API Key (after 1 attempt)") != std::string::npos);
    CHECK(r.err.find("sk-not-the-server-key") == std::string::npos);
    CHECK(r.err.find("==> create") == std::string::npos);
    CHECK(run_containers_gone(j));
  }
  {  // the right key, a prompt larger than the model's context: 400, not retried
    Configured c(server, "");
    CliResult r = c.run();
    json j = parse_result(r);
    INFO(r.err);
    CHECK(r.exit_code == 3);
    const std::string e = j["error"];
    CHECK(e.find("provider said 400: request (") != std::string::npos);
    CHECK(e.find(" tokens) exceeds the available context size (256 tokens), try increasing it (after 1 attempt)") !=
          std::string::npos);
    CHECK(run_containers_gone(j));
  }
}

TEST_CASE("tool_choice required gives a tool call under a template with JSON tool calls", "[llama][tools]") {
  json body = tool_request();
  {
    LlamaServer server("json-tools");
    CHECK(server.props()["chat_template_caps"]["supports_tool_calls"] == true);
    auto [status, reply] = server.chat(body);
    INFO(reply.dump() << server.logs());
    REQUIRE(status == 200);
    const json& choice = reply["choices"][0];
    CHECK(choice["finish_reason"] == "tool_calls");
    REQUIRE(choice["message"]["tool_calls"].size() >= 1);
    const json& call = choice["message"]["tool_calls"][0];
    CHECK(call["type"] == "function");
    CHECK(call["function"]["name"] == "read_file");
    CHECK_FALSE(call["id"].get<std::string>().empty());
    const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    REQUIRE(args.is_object());
    CHECK(args["path"].is_string());

    // The next turn carries the call and its result (role "tool"): accepted.
    body["messages"].push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", {call}}});
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "def add(a, b):\n    return a - b\n"}});
    auto [status2, reply2] = server.chat(body);
    INFO(reply2.dump());
    CHECK(status2 == 200);
    CHECK(reply2["choices"][0]["finish_reason"] == "tool_calls");
  }
}

TEST_CASE("the fixture: a server whose owner is gone is reaped, and stop removes one", "[llama]") {
  const std::string script = std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/llama-server.sh";
  const pid_t owner = std::atoi(sh("sleep 600 >/dev/null 2>&1 & echo $!").c_str());
  REQUIRE(owner > 1);
  std::string name;
  {
    LlamaServer server("chatml", {}, owner);
    name = server.name();
    CHECK(containers_with_label("io.lazyagent.role=llama-fixture").size() >= 1);
    CHECK(sh("podman container exists " + name + " && echo yes") == "yes\n");
    // The owner is alive: reap leaves the server alone.
    sh(script + " reap 2>/dev/null");
    CHECK(sh("podman container exists " + name + " && echo yes") == "yes\n");
    kill(owner, SIGKILL);
    for (int i = 0; i < 100 && kill(owner, 0) == 0; ++i) usleep(20 * 1000);
    const std::string said = sh(script + " reap 2>&1");
    CHECK(said.find("reaped " + name) != std::string::npos);
    CHECK(sh("podman container exists " + name + " || echo gone") == "gone\n");
  }  // the destructor's stop of a removed server is a no-op
  CHECK(sh("podman container exists " + name + " || echo gone") == "gone\n");
  // Stopping a server that is already gone is not an error (cleanup paths may race).
  CHECK(sh(script + " stop " + name + " >/dev/null 2>&1; echo $?") == "0\n");
  // An unknown template name is refused (llama-server itself would take it as
  // the template's text and start), and its container is removed.
  const std::string said = sh(script + " start --owner-pid " + std::to_string(getpid()) +
                              " --template no-such-template 2>&1; echo \"exit=$?\"");
  CHECK(said.find("--template no-such-template: not a file") != std::string::npos);
  CHECK(said.find("exit=1") != std::string::npos);
  CHECK(sh("podman ps -a --filter label=io.lazyagent.owner-pid=" + std::to_string(getpid()) + " --format '{{.Names}}'") == "");
}

TEST_CASE("the planner's tool loop against llama-server: real tool calls under json-tools, bounded by max_turns", "[llama][tools]") {
  LlamaServer server("json-tools");
  Configured c(server,
               "planner:\n  tools: true\n  max_turns: 3\n  tool_choice: required\n  max_reply_tokens: 200\n");
  CliResult r = c.run();
  json j = parse_result(r);
  INFO(r.err << server.logs());
  // Random weights: the calls are real tool calls (the template's grammar
  // makes their shape) with noise for arguments. The loop answers each with
  // a bounded result (an error, mostly) and stops at the turn cap, or on a
  // submit_patch whose noise the contract refuses: exit 4 either way.
  CHECK(r.exit_code == 4);
  const json loop = j["planner"]["loop"];
  REQUIRE(loop.is_object());
  CHECK(loop["turns"].get<int>() >= 1);
  CHECK(loop["turns"].get<int>() <= 3);
  CHECK(loop["tool_choice"] == "required");
  CHECK_FALSE(loop["tool_calls"].empty());
  const std::string stop = loop["stop_reason"];
  CHECK((stop == "max_turns" || stop == "submitted"));
  for (const auto& call : loop["tool_calls"]) {
    const std::string name = call["name"];
    CHECK((name == "list_files" || name == "read_file" || name == "search" || name == "submit_patch"));
  }
  check_real_usage(j["usage"]);
  CHECK(run_containers_gone(j));
}
