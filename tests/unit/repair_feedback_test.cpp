// The repair loop's feedback to the planner (bounded, escaped, re-bounded on
// the planner's side) and the scripted provider's `require` check, against a
// real stub server on a loopback port.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include "contract/planner_task.h"
#include "provider/provider_client.h"
#include "provider/provider_stub.h"
#include "pipeline/triage_run.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

PlannerTask small_task() {
  SeedSnapshot seed;
  seed.entries.push_back({"calculator.py", SeedEntry::Kind::kFile, 0644, "def add(a, b):\n    return a - b\n"});
  Config config;
  return build_task(seed, config, "fix add", "t-1");
}

std::string user_prompt(const PlannerTask& t) { return build_chat_request(t).messages.at(1).content; }

}  // namespace

TEST_CASE("feedback: the test output is cut to its tail and escaped", "[repair]") {
  const std::string head = "HEAD-MARKER\n" + std::string(20000, 'a');
  const std::string tail = "\x1b]0;owned\x07\r\nAssertionError: 6 != 5\n";
  const AttemptFeedback f = bounded_feedback(1, "tests failed\x1b[2J", R"({"files":[]})", head + tail);
  CHECK(f.attempt == 1);
  CHECK(f.output_cut);
  CHECK(f.test_output.size() <= kMaxFeedbackOutputBytes);
  CHECK(f.test_output.find("HEAD-MARKER") == std::string::npos);
  CHECK(f.test_output.find("\\x1b]0;owned\\x07\nAssertionError: 6 != 5\n") != std::string::npos);
  CHECK(f.test_output.find('\x1b') == std::string::npos);
  CHECK(f.reason == "tests failed\\x1b[2J");
  // A cut in the middle of a multi-byte character leaves valid UTF-8.
  const AttemptFeedback u = bounded_feedback(1, "r", "", "x" + std::string(4000, '\0') + std::string(3000, 'y') + "\xc3\xa9" + std::string(7998, 'z'));
  CHECK(u.test_output.size() <= kMaxFeedbackOutputBytes);
  const AttemptFeedback small = bounded_feedback(2, "r", "", "short\n");
  CHECK_FALSE(small.output_cut);
  CHECK(small.test_output == "short\n");
}

TEST_CASE("feedback: in the prompt of the next attempt only, and re-bounded by the planner", "[repair]") {
  PlannerTask t = small_task();
  CHECK(user_prompt(t).find("Previous attempt") == std::string::npos);
  CHECK(task_to_json(t)["feedback"].is_null());

  t.feedback = bounded_feedback(1, "tests failed: the test command exited 1", R"({"files":[{"path":"calculator.py","content":"x"}]})",
                                "FAIL: test_add\nAssertionError: 6 != 5\n");
  const std::string prompt = user_prompt(t);
  CHECK(prompt.find("\nPrevious attempt 1 did not pass: tests failed: the test command exited 1\n"
                    "Its patch was:\n{\"files\":[{\"path\":\"calculator.py\",\"content\":\"x\"}]}\n"
                    "Test output of that attempt, control characters escaped:\n<<<test-output\n"
                    "FAIL: test_add\nAssertionError: 6 != 5\ntest-output>>>\n") != std::string::npos);

  auto back = task_from_json(task_to_json(t).dump());
  REQUIRE(back.ok());
  CHECK(back->feedback.attempt == 1);
  CHECK(back->feedback.test_output == t.feedback.test_output);
  CHECK(user_prompt(*back) == prompt);

  // A task file with raw escapes and a huge output is bounded again inside the planner.
  json j = task_to_json(t);
  j["feedback"]["test_output"] = std::string(100000, 'q') + "\x1b[31m";
  auto hostile = task_from_json(j.dump());
  REQUIRE(hostile.ok());
  CHECK(hostile->feedback.test_output.size() <= kMaxFeedbackOutputBytes);
  CHECK(hostile->feedback.test_output.find('\x1b') == std::string::npos);
  CHECK(hostile->feedback.output_cut);
}

TEST_CASE("stub scripts: require is a string or a list of non-empty strings", "[repair]") {
  auto one = parse_stub_script(R"({"replies":[{"content":"c","require":"AssertionError"}]})");
  REQUIRE(one.ok());
  CHECK(one->replies[0].require == std::vector<std::string>{"AssertionError"});
  auto two = parse_stub_script(R"({"replies":[{"content":"c","require":["a","b"]}]})");
  REQUIRE(two.ok());
  CHECK(two->replies[0].require.size() == 2);
  CHECK(parse_stub_script(R"({"replies":[{"require":[""]}]})").error().message ==
        "stub script: replies[0].require: must be a non-empty string or an array of non-empty strings");
  CHECK(parse_stub_script(R"({"replies":[{"require":3}]})").error().message ==
        "stub script: replies[0].require: must be a non-empty string or an array of non-empty strings");
}

TEST_CASE("stub: a reply with require answers 400 unless the messages carry the text", "[repair]") {
  StubReply wrong, fix;
  wrong.content = "first";
  fix.content = "second";
  fix.require = {"Previous attempt 1", "6 != 5"};
  ProviderStub stub(StubScript{"", {wrong, fix}});
  auto port = stub.listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  ProviderSettings s;
  s.base_url = "http://127.0.0.1:" + std::to_string(*port) + "/v1";
  s.model = "m";
  s.max_retries = 0;
  ChatRequest req;
  req.messages = {{"user", "fix add"}};
  auto first = chat_completion(s, req);
  REQUIRE(first.ok());
  CHECK(first->content == "first");
  // The second in-order reply requires the feedback; without it: 400.
  auto refused = chat_completion(s, req);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("provider said 400: provider stub: the request lacks required text: Previous attempt 1") !=
        std::string::npos);
  // Text split across messages and JSON escapes still count (decoded contents).
  req.messages = {{"system", "Previous attempt 1 did not pass"}, {"user", "AssertionError: 6 != 5\n\"quoted\""}};
  auto ok = chat_completion(s, req);
  REQUIRE(ok.ok());
  CHECK(ok->content == "second");
}

TEST_CASE("baseline cache key: seed content, test command and image all count", "[repair]") {
  const std::string k = baseline_key("seed", "python3 -m unittest -v", "sha256:1");
  CHECK(k.size() == 64);
  CHECK(k == baseline_key("seed", "python3 -m unittest -v", "sha256:1"));
  CHECK(k != baseline_key("seed2", "python3 -m unittest -v", "sha256:1"));
  CHECK(k != baseline_key("seed", "python3 -m pytest", "sha256:1"));
  CHECK(k != baseline_key("seed", "python3 -m unittest -v", "sha256:2"));
}
