// A test runner's closing report, the evidence verdict.h judges: found from
// the end of the output ("the last report wins": a report printed earlier, by
// a test or a first command, is overruled by a later one). Recognised (real
// outputs of each in tests/fixtures/runner-output/, captured by its capture/):
//   unittest  "Ran N tests in Xs" then "OK" / "FAILED (failures=F, errors=E)"
//   pytest    "=== 3 passed, 1 skipped in 0.12s ===" (default, -v, -rA,
//             --tb=no) and the bare "3 passed, 1 skipped in 0.12s" of -q.
//             -qq prints no summary at all: no report (use -q, or JUnit).
//   plain     "N passed, M failed"
//   ctest     "100% tests passed, 0 tests failed out of 19"
//   cargo     every "running N tests" ... "test result: ok. P passed; F failed;
//             I ignored; ..." block of the output, summed; a block without its
//             result line (a test binary that exited early) voids the report
//   go        `go test` package lines ("ok  pkg 0.004s", "FAIL pkg ...",
//             summed; counted in packages, or in top-level tests with -v's
//             "--- PASS: TestX" lines), and `go test -json` events
//   node      `node --test`'s closing counts, TAP ("# tests 3" "# pass 2" ...)
//             or spec ("ℹ tests 3" ...)
// Colour codes (SGR escapes) are ignored when matching.
// Pure: strings in, values out. The output is untrusted; counts saturate.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lazyagent {

struct RunnerReport {
  bool found = false;
  std::string runner;  // "unittest", "pytest", "plain", "ctest", "cargo", "go", "go-json", "node", "junit"
  long tests_run = 0;  // tests that ran: passed + failed (skipped ones did not run)
  long failed = 0;     // failures + errors
  long passed = 0;
  long skipped = 0;    // skipped, ignored, todo (when the runner counts them)
  std::string unit = "tests";  // "packages" for plain `go test`, which counts no tests
  bool success = false;
};

// Finds the last runner report in the output.
RunnerReport find_runner_report(std::string_view output);

// {"runner","unit","tests_run","passed","failed","skipped"}, or null when none
// was found; and back (lenient: a bad document gives found=false).
nlohmann::json runner_report_to_json(const RunnerReport& r);
RunnerReport runner_report_from_json(const nlohmann::json& j);

}  // namespace lazyagent
