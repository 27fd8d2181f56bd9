// Per-test results of the compiled-language and Node runners, from their
// ordinary output (real captures in tests/fixtures/runner-output/):
//   go test -v     "--- PASS: TestX (0.00s)" (subtests indented), the id is
//                  "<package>.TestX" once the package's "ok"/"FAIL" line names it
//   go test -json  {"Action":"pass","Package":"p","Test":"TestX"} -> "p.TestX"
//   cargo test     "test tests::adds ... ok|FAILED|ignored"
//   ctest          "1/3 Test #1: add ......   Passed    0.01 sec" / "***Failed"
//   node --test    TAP "ok 1 - adds" / "not ok 2 - x" (# SKIP, # TODO; nested
//                  subtests "group > multiplies"), spec "✔ adds (1ms)" / "✖" / "﹣"
// Plain `go test`, `cargo test -q` and pytest -q name no passing tests: no cases.
// Pure, and the output is untrusted (see test_report.h).
#pragma once

#include <string_view>
#include <vector>

#include "contract/test_report.h"

namespace lazyagent {

// `lines`: the output split at '\n', without '\r'. The first format that
// yields any case wins.
TestCases parse_runner_cases(const std::vector<std::string_view>& lines);

}  // namespace lazyagent
