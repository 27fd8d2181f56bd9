// `lazyagent-oci run` end to end: the real planner image and container, the
// real sandbox, and the project's scripted provider (a real HTTP server
// speaking the chat-completions protocol) standing in for the model.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "sk-lazyagent-it-key-0123456789abcdef";

std::string content_of(const std::string& patch_json) {
  return json::parse(patch_json).dump();  // the reply content: the patch as JSON text
}

// The scripted provider behind podman secrets (harness.h), 2 retries.
struct Provider : PodmanProvider {
  explicit Provider(lazyagent::StubScript script, const std::string& key_to_configure = kKey,
                    const std::string& extra_yaml = "")
      : PodmanProvider(std::move(script), key_to_configure, 2, extra_yaml) {}
};

lazyagent::StubScript tagged_script() {
  lazyagent::StubScript s;
  s.api_key = kKey;
  auto reply = [](std::string match, std::string content) {
    lazyagent::StubReply r;
    r.match = std::move(match);
    r.content = std::move(content);
    return r;
  };
  s.replies = {
      reply("[wrong]", content_of(wrong_patch())),
      reply("[fenced]", "Here you go:\n```json\n" + json::parse(fixing_patch()).dump(2) + "\n```\n"),
      reply("[traversal]", R"({"files":[{"path":"../../etc/cron.d/x","content":"* * * * * root sh\n"}]})"),
      reply("[prose]", "Change the minus sign in add to a plus sign."),
      reply("[hunt]", content_of(attack_patch(
                          "import os, glob\n"
                          "blob = repr(dict(os.environ))\n"
                          "for p in glob.glob('/proc/*/environ') + glob.glob('/run/secrets/*') + glob.glob('/work/**', recursive=True):\n"
                          "    try: blob += open(p, 'rb').read().decode('latin-1')\n"
                          "    except Exception: pass\n"
                          "needle = 'sk-lazyagent-' + 'it-key'  # split: this file itself is searched too\n"
                          "print('SECRET_FOUND' if needle in blob else 'NO_SECRET_FOUND')\n"))),
      reply("", content_of(fixing_patch())),
  };
  return s;
}

// No container of any run recorded in this test's own run store (planner,
// sandbox, baseline) remains. The podman service is shared with concurrent
// tests, so a global count would blame them.
bool no_containers_of_runs_in(const std::string& state) {
  std::size_t runs = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state + "/lazyagent-oci/runs", ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    ++runs;
    const std::string run_id = name.substr(0, name.size() - 5);
    if (!containers_with_label("io.lazyagent.run=" + run_id).empty()) return false;
  }
  return runs > 0;  // a store with no runs would prove nothing
}

}  // namespace

TEST_CASE("run: a fixing reply passes, the planner and sandbox are gone, the key is nowhere", "[run][quick]") {
  Provider p(tagged_script());
  const std::string report = p.state.path() + "/report.xml";
  CliResult r = p.run({"--report", "junit:" + report});
  json j = json_out(r);
  CHECK(r.exit_code == 0);
  // --report: the run's per-test results as JUnit XML, the verdict among its properties.
  std::ifstream xml_file(report);
  REQUIRE(xml_file);
  const std::string xml((std::istreambuf_iterator<char>(xml_file)), std::istreambuf_iterator<char>());
  CHECK(xml.find("<testsuite") != std::string::npos);
  CHECK(xml.find("lazyagent-oci " + j["run_id"].get<std::string>()) != std::string::npos);
  CHECK(j["tests_passed"] == true);
  CHECK(j["test_exit_code"] == 0);
  CHECK(j["changed_paths"] == json::array({"calculator.py"}));
  const std::string task = j["planner_task_id"];
  CHECK(task.rfind("t-", 0) == 0);
  CHECK(j["usage"]["total_tokens"] == 46);
  CHECK(j["timings"].contains("plan"));
  CHECK(j["sandbox_id"].get<std::string>().size() == 64);
  CHECK(no_containers_of_runs_in(p.state.path()));

  CliResult show = run_cli({p.state.path()}, {"task", "show", task, "--json"});
  REQUIRE(show.exit_code == 0);
  json t = json::parse(show.out);
  CHECK(t["status"] == "patch");
  CHECK(t["model"] == "lazyagent-stub");
  CHECK(t["usage"]["prompt_tokens"] == 12);
  CliResult logs = run_cli({p.state.path()}, {"task", "logs", task});
  CHECK(logs.out.find("planner: patch accepted (files): 1 file(s)") != std::string::npos);

  // The key never reaches the run store, the logs, the result or the CLI's output.
  CHECK(read_tree(p.state.path()).find(kKey) == std::string::npos);
  CHECK((r.out + r.err + show.out + logs.out).find(kKey) == std::string::npos);
  // The provider saw the prompt with the instruction and the test file as context.
  const auto requests = p.stub().request_log();
  REQUIRE(!requests.empty());
  CHECK(requests.back().find("Fix calculator.add") != std::string::npos);
  CHECK(requests.back().find("test_calculator.py (read-only)") != std::string::npos);
}

TEST_CASE("run: wrong, fenced, refused and non-patch replies", "[run]") {
  Provider p(tagged_script());
  CliResult wrong = p.run({"[wrong] fix add"});
  CHECK(wrong.exit_code == 1);
  CHECK(json_out(wrong)["tests_passed"] == false);

  CliResult fenced = p.run({"[fenced] fix add"});
  CHECK(fenced.exit_code == 0);
  CHECK(json_out(fenced)["tests_passed"] == true);

  for (const char* tag : {"[traversal]", "[prose]"}) {
    CliResult refused = p.run({std::string(tag) + " fix add"});
    json j = json_out(refused);
    CHECK(refused.exit_code == 4);
    CHECK(j["sandbox_id"] == "");  // refused before any sandbox for the patch existed
    CHECK_FALSE(j["findings"].empty());
    // The baseline runs before the planner; the runs above cached it (same
    // seed, command and image), so this run created no container at all.
    CHECK(refused.err.find("==> create") == std::string::npos);
  }
  CHECK(no_containers_of_runs_in(p.state.path()));
}

TEST_CASE("run: a patch hunting for secrets inside the sandbox finds none", "[run]") {
  Provider p(tagged_script());
  CliResult r = p.run({"[hunt] fix add"});
  json j = json_out(r);
  CHECK(j["test_output"].get<std::string>().find("NO_SECRET_FOUND") != std::string::npos);
  CHECK(j["tests_passed"] == true);
}

TEST_CASE("run: provider failures are exit 3 with a clear message and create no sandbox for a patch", "[run]") {
  SECTION("401: a wrong key") {
    Provider p(tagged_script(), "sk-wrong-key-for-the-stub-000");
    CliResult r = p.run();
    CHECK(r.exit_code == 3);
    CHECK(no_containers_of_runs_in(p.state.path()));
    CHECK(json_out(r)["error"].get<std::string>().find("provider said 401: invalid api key") != std::string::npos);
    CHECK(r.err.find("sk-wrong-key") == std::string::npos);
    // The one sandbox is the baseline's, before the planner (planner.baseline_first).
    const std::size_t baseline = r.err.find("==> baseline: the seed's tests without the patch");
    const std::size_t create = r.err.find("==> create");
    CHECK(baseline != std::string::npos);
    CHECK(create > baseline);
    CHECK(r.err.find("==> create", create + 1) == std::string::npos);
    CHECK(create < r.err.find("==> planner"));
    // Without the baseline, none at all.
    CliResult off = p.run({"--no-baseline"});
    CHECK(off.exit_code == 3);
    CHECK(off.err.find("==> create") == std::string::npos);
  }
  SECTION("429 then success") {
    lazyagent::StubScript s;
    s.api_key = kKey;
    lazyagent::StubReply busy;
    busy.status = 429;
    busy.retry_after = "1";
    busy.content = "slow down";
    lazyagent::StubReply ok;
    ok.content = content_of(fixing_patch());
    s.replies = {busy, ok};
    Provider p(s);
    CliResult r = p.run();
    json j = json_out(r);
    CHECK(r.exit_code == 0);
    CHECK(j["planner"]["attempts"] == 2);
  }
  SECTION("500 every time") {
    lazyagent::StubScript s;
    s.api_key = kKey;
    lazyagent::StubReply broken;
    broken.status = 500;
    broken.content = "the model server fell over";
    s.replies = {broken};
    Provider p(s);
    CliResult r = p.run();
    CHECK(r.exit_code == 3);
    CHECK(no_containers_of_runs_in(p.state.path()));
    CHECK(json_out(r)["error"].get<std::string>().find("provider said 500: the model server fell over") != std::string::npos);
  }
  SECTION("a reply slower than the timeout") {
    lazyagent::StubScript s;
    s.api_key = kKey;
    lazyagent::StubReply slow;
    slow.delay_ms = 5000;
    slow.content = content_of(fixing_patch());
    s.replies = {slow};
    Provider p(s, kKey, "  timeout_seconds: 1\n");
    CliResult r = p.run();
    CHECK(r.exit_code == 3);
    CHECK(no_containers_of_runs_in(p.state.path()));
    CHECK(json_out(r)["error"].get<std::string>().find("did not answer within 1000 ms") != std::string::npos);
  }
  SECTION("a refused connection") {
    Provider p(tagged_script());
    p.configure("http://host.containers.internal:9/v1", kKey);
    CliResult r = p.run();
    CHECK(r.exit_code == 3);
    CHECK(no_containers_of_runs_in(p.state.path()));
    CHECK(json_out(r)["error"].get<std::string>().find("cannot connect to the provider") != std::string::npos);
  }
  SECTION("a malformed body") {
    lazyagent::StubScript s;
    s.api_key = kKey;
    lazyagent::StubReply junk;
    junk.raw_body = "{\"choices\": [";
    s.replies = {junk};
    Provider p(s);
    CliResult r = p.run();
    CHECK(r.exit_code == 3);
    CHECK(no_containers_of_runs_in(p.state.path()));
  }
}

TEST_CASE("run: a provider that refuses json_schema gets json_object, and the records say so", "[run]") {
  lazyagent::StubScript s;
  s.api_key = kKey;
  lazyagent::StubReply refuse;  // llama-server's words for a response_format type it does not know
  refuse.match = R"("type":"json_schema")";
  refuse.status = 400;
  refuse.raw_body = R"({"error":{"code":400,"message":"response_format type must be one of \"text\" or \"json_object\", but got: json_schema","type":"invalid_request_error"}})";
  lazyagent::StubReply ok;
  ok.content = content_of(fixing_patch());
  s.replies = {refuse, ok};
  Provider p(s);  // the planner image must hold this binary: planner_image() (harness.h)
  CliResult r = p.run({"--no-baseline"});
  json j = json_out(r);
  CHECK(r.exit_code == 0);
  CHECK(j["planner"]["response_format"] == "json_object");
  CHECK(j["planner"]["attempts"] == 2);
  REQUIRE(j["planner"]["response_format_refusals"].size() == 1);
  CHECK(j["planner"]["response_format_refusals"][0] ==
        "json_schema: response_format type must be one of \"text\" or \"json_object\", but got: json_schema");
  const auto requests = p.stub().request_log();
  REQUIRE(requests.size() == 2);
  const json first = json::parse(requests[0]);
  CHECK(first["response_format"]["type"] == "json_schema");
  CHECK(first["response_format"]["json_schema"]["strict"] == true);
  CHECK(first["response_format"]["json_schema"]["schema"]["properties"]["files"]["items"]["properties"]["path"]["enum"] ==
        json::array({"calculator.py"}));
  CHECK(json::parse(requests[1])["response_format"] == json({{"type", "json_object"}}));
  CliResult show = run_cli({p.state.path()}, {"task", "show", j["planner_task_id"], "--json"});
  REQUIRE(show.exit_code == 0);
  CHECK(json::parse(show.out)["response_format"] == "json_object");
}

TEST_CASE("run: an unconfigured provider is a usage error that says what to do", "[run][quick]") {
  TempDir state, dir;
  const std::string cfg = dir.file("c.yaml", "seed: " + seed_dir() +
                                                 "\nprovider:\n  secrets:\n    base_url: LAZYAGENT_IT_NONE_URL\n"
                                                 "    model: LAZYAGENT_IT_NONE_MODEL\n    api_key: LAZYAGENT_IT_NONE_KEY\n");
  CliResult r = run_cli({state.path()}, {"run", "--config", cfg});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the provider is not configured (missing podman secrets: LAZYAGENT_IT_NONE_URL") != std::string::npos);
  CHECK(r.err.find("lazyagent-oci configure") != std::string::npos);
}

TEST_CASE("run: SIGINT while the planner waits on the provider removes the planner container", "[run]") {
  lazyagent::StubScript s;
  s.api_key = kKey;
  lazyagent::StubReply slow;
  slow.delay_ms = 20000;
  slow.content = content_of(fixing_patch());
  s.replies = {slow};
  Provider p(s);
  TempDir io;
  const pid_t pid = spawn_cli({p.state.path()}, {"run", "--config", p.config(), "--json"}, io.path());
  const std::string label = "io.lazyagent.pid=" + std::to_string(pid);
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    // The planner's container (the baseline's sandbox runs before it).
    running = !sh("podman ps --filter label=" + label +
                  " --filter label=io.lazyagent.role=planner --filter status=running --format '{{.ID}}'")
                   .empty();
    if (!running) usleep(50 * 1000);
  }
  REQUIRE(running);
  kill(pid, SIGINT);
  CHECK(wait_cli(pid, 30) == 130);
  CHECK(containers_with_label(label).empty());
  // This run's sandboxes only: other runs on the machine may have theirs.
  CHECK(sh("podman ps -a --filter label=" + label + " --filter label=io.lazyagent.role=sandbox --format '{{.ID}}'").empty());
}

TEST_CASE("run --runtime runsc: the planner runs on runc, the sandbox under gVisor, and verify links the task", "[run][gvisor]") {
  Provider p(tagged_script(), kKey, "engine:\n  runtime: runsc\n");
  CliResult r = p.run();
  json j = json_out(r);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["planner"]["status"] == "patch");  // the planner reached the provider: it had a network
  CHECK(j["policy"]["runtime"] == "runsc");
  CHECK(j["policy"]["not_enforced"] == json::array({"memory", "pids", "cpu", "masked_paths", "user_namespace"}));
  CHECK(j["isolation_probe"]["violations"].empty());
  // This run's own planner and sandbox are gone (other suites may be running).
  CHECK(containers_with_label("io.lazyagent.run=" + j["run_id"].get<std::string>()).empty());
  CliResult v = run_cli({p.state.path()}, {"verify", j["run_id"], "--json"});
  CHECK(v.exit_code == 0);
  const json pv = json::parse(v.out)["provenance"];
  CHECK(pv["planner_task_id"] == j["planner_task_id"]);
  CHECK(pv["runtime"] == "runsc");
}

TEST_CASE("run: a reply with bidirectional controls is refused by the planner's own validation, with the line",
          "[run][hidden_text]") {
  lazyagent::StubScript s;
  s.api_key = kKey;
  lazyagent::StubReply trojan;
  trojan.content = content_of(attack_patch("ACCESS = 'user\xe2\x80\xae \xe2\x81\xa6# admin\xe2\x81\xa9 \xe2\x81\xa6'"));
  s.replies = {trojan};
  Provider p(std::move(s));  // the planner image must hold this binary: planner_image() (harness.h)
  CliResult r = p.run();
  json j = json_out(r);
  CHECK(r.exit_code == 4);
  CHECK(j["sandbox_id"] == "");
  // The planner refused it (the first validation): the orchestrator never got a patch.
  CHECK(j["reason"].get<std::string>().rfind("patch refused by the planner: bidi_control_in_content", 0) == 0);
  REQUIRE(j["findings"].size() == 1);
  CHECK(j["findings"][0]["code"] == "bidi_control_in_content");
  CHECK(j["findings"][0]["path"] == "calculator.py");
  CHECK(j["findings"][0]["line"] == 1);
  CHECK(no_containers_of_runs_in(p.state.path()));
}
