// JUnit XML as the runner-independent evidence (config `report: junit:PATH`):
// most runners can write it (pytest --junitxml, ctest --output-junit,
// go-junit-report, cargo2junit, node --test-reporter=junit, Surefire), and it
// names every test. Read with a real XML parser (pugixml, Debian's
// libpugixml-dev, linked statically), never with patterns.
//
// Counted from the <testcase> elements themselves (the totals a <testsuite>
// claims in its attributes are not trusted): a testcase with a <failure> or
// <error> child failed, with <skipped> was skipped (pytest writes xfail that
// way), otherwise passed. Ids: "classname.name", or the name alone when the
// classname is empty or equal to it (ctest).
//
// The file is written by code under test: it is untrusted like the log. Size
// is bounded (kMaxJunitBytes), so is the number of testcases; pugixml expands
// no external entities and its parser and tree walk are not recursive.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "contract/runner_report.h"
#include "contract/test_report.h"

namespace lazyagent {

inline constexpr std::size_t kMaxJunitBytes = 8u << 20;
inline constexpr std::size_t kMaxJunitCases = 200000;

struct JunitReport {
  std::string error;    // why the document is no evidence; empty when it is
  RunnerReport report;  // runner "junit"; found only without error
  TestCases cases;      // format "junit", complete
};

JunitReport parse_junit_xml(std::string_view xml);

// The other way (`test --report junit:PATH`): a run's per-test results as a
// JUnit XML document CI systems read, one <testsuite name=`suite`> with a
// <testcase> per case (a <failure/> or <skipped/> child as the outcome says);
// `reason` (a failed verdict's) goes into the suite's properties. Written
// with pugixml, so every name is escaped. parse_junit_xml reads it back.
std::string junit_xml_of(const TestCases& cases, const std::string& suite, bool passed, const std::string& reason);

// Getting the file out of the sandbox, the same way on every engine: the
// test command runs in a subshell after the report file is removed (a stale
// copy in the seed is no evidence), then the file is printed to the output
// between marker lines, length first:
//   lazyagent-oci junit-report: N     (or ": missing")
//   <N bytes of the file>
//   lazyagent-oci junit-report end
// and the command exits with the test command's status. The block travels in
// the bounded log: when the output is cut (limits.log_bytes), a report that
// does not fit in the kept tail is cut too, and then is no evidence.
// `path` is config.report's PATH (config.cpp checked it: no quoting needed,
// it is single-quoted anyway). `remove_after`: the file is removed once
// printed (the tool's own report path, runner_driver.h).
std::string test_command_with_junit(const std::string& test_command, const std::string& path,
                                    bool remove_after = false);

struct JunitDump {
  bool found = false;  // a block was in the output
  bool missing = false;  // the block says the command wrote no file
  std::string xml;     // the file, when complete
  std::string error;   // "missing", cut, or malformed block; empty when xml is the file
};

// Finds the last block, removes it from `output` (it is evidence, not test
// output), and returns it. The test can print a block of its own; the last
// one wins, and the test could as well have written the file.
JunitDump take_junit_dump(std::string* output);

}  // namespace lazyagent
