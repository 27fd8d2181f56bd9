// What a new user meets (issue 28): the CLI agrees with itself and with its
// README. Each case runs the real binary the way the README tells a user to.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "harness.h"

using nlohmann::json;
using namespace it;

TEST_CASE("eval --help says --no-baseline keeps the verdict rule (an exit 0 with no report fails)", "[cli]") {
  TempDir state;
  CliResult r = run_cli({state.path()}, {"eval", "--help"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("exit code alone") == std::string::npos);
  CHECK(r.out.find("a test runner's report and the exit code must agree (an exit 0 with no report fails)") !=
        std::string::npos);
}
