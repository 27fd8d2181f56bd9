// One command waits out an outage of its engine (pipeline/engine_wait.h), on
// the recording fake engine (fake_engine.h): it says so as the outage begins
// and ends, gives up past its budget with an error that names it, and a blip
// over by the first check is no outage. The real thing (podman's service
// stopped under a session's command) is in tests/security/outage_test.cpp.
#include "catch_compat.h"

#include <chrono>

#include "fake_engine.h"
#include "pipeline/engine_wait.h"

using namespace lazyagent;

TEST_CASE("engine wait: an outage is waited out and said twice, a blip is not said", "[outage][quick]") {
  fake::Engine engine;
  engine.unreachable_at_start = 2;
  std::vector<std::string> said;
  EngineWait wait(engine, 120, "the command's timeout", [&said](const std::string& s) { said.push_back(s); });
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = wait.ride_out(Error{ErrorKind::kUnreachable, "cannot reach podman"});
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(st.ok());
  CHECK(ms >= EngineWait::kFirstCheckMs + 2 * EngineWait::kFirstCheckMs);  // 250 ms, then 500 ms
  REQUIRE(said.size() == 2);
  REQUIRE(wait.log().size() == 1);
  CHECK(said[0] == "fake unreachable since " + clock_time(wait.log()[0].began) +
                       ", waiting (up to 120 s, the command's timeout): cannot reach podman");
  CHECK(said[1].rfind("fake answers again after 0.", 0) == 0);
  CHECK(said[1].find(" s; carrying on") != std::string::npos);
  CHECK_FALSE(wait.log()[0].gave_up);
  CHECK(outage_log_json(wait.log()[0])["gave_up"] == false);

  // Answers at the first check: nothing said, nothing logged.
  said.clear();
  CHECK(wait.ride_out(Error{ErrorKind::kUnreachable, "went away mid-call"}).ok());
  CHECK(said.empty());
  CHECK(wait.log().size() == 1);
}

TEST_CASE("engine wait: past its budget, an engine_unreachable error naming the budget", "[outage][quick]") {
  fake::Engine engine;
  engine.unreachable_at_start = -1;
  EngineWait wait(engine, 1, "the command's timeout", nullptr);
  const Status st = wait.ride_out(Error{ErrorKind::kUnreachable, "cannot reach podman"});
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::kUnreachable);
  CHECK(st.error().message == "fake stayed unreachable for more than 1 s (the command's timeout): the fake engine is away");
  REQUIRE(wait.log().size() == 1);
  CHECK(wait.log()[0].gave_up);
  CHECK(wait.log()[0].ms >= 1000);
}
