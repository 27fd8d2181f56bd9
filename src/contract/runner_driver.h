// Which evidence decides a run, and the command the sandbox runs to get it.
//
// The text a test command prints is written by the same process as the code
// under test: a patch that prints "Ran 4 tests ... OK" and ends the process
// with status 0 at import forges it. A report the *runner* writes at the end
// of its run cannot be forged that way: a process that ends before its runner
// finishes leaves none, and one whose runner ran the real tests has the real
// outcomes in it. So by default (config `report: auto`) the tool recognises
// the test commands it can safely rewrite and has the runner write a JUnit XML
// report at a path it picks per run (a random nonce in the name):
//   - pytest (`pytest ...`, `python3 -m pytest ...`): `--junitxml=PATH` added
//     after the user's arguments (before a `--`). A command that disables the
//     plugin (`-p no:junitxml`) falls back to the output, and says so.
//   - unittest (`python3 -m unittest ...`, `python -m unittest ...`, or a path
//     to python3): the same
//     interpreter runs a small stdlib-only driver (`-c`) that runs
//     unittest.main with the same arguments and a result class that records
//     every test, and writes the XML only after the run has finished.
// "Safely" means a simple command: words of letters, digits and `-_./=:,+@%`
// only, no shell metacharacters, no variable assignments, no options to the
// interpreter before `-m`. Anything else keeps the output as evidence.
//
// The report travels like the user's JUnit file (junit_report.h: printed to the
// log between marker lines after the command, then taken out), is parsed by
// the same reader and judged by the same rules. Its path lies in the sandbox's
// own /tmp and exists only from the runner's end until the wrapper has printed
// and removed it: a test walking /tmp during its run finds nothing of it.
//
// The code under test can still learn the path (it is in the runner's argv)
// and write a report of its own, or overwrite it from an atexit handler: this
// stops the generic forgeries, not a forger who targets the tool.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyagent {

enum class EvidenceKind {
  kOutput,  // the runner's closing report in the text (runner_report.h)
  kJunit,   // the JUnit file the user's config names (report: junit:PATH)
  kDriver,  // a JUnit report the tool had the runner write (this file)
};

// "output", "junit", "driver": the result's `evidence`.
const char* evidence_name(EvidenceKind k);

struct EvidencePlan {
  EvidenceKind kind = EvidenceKind::kOutput;
  std::string command;      // what the sandbox runs (the user's command, or it wrapped)
  std::string report_path;  // kJunit: the user's PATH; kDriver: the tool's absolute path
  std::string runner;       // kDriver: "pytest" or "unittest"
  std::string note;         // why `report: auto` kept the output; "" otherwise
};

// `report` is config.report: "" or "auto", "output", or "junit:PATH".
// `nonce`: letters and digits, fresh per run (random_nonce()).
EvidencePlan plan_evidence(const std::string& test_command, const std::string& report, const std::string& nonce);

// What the evidence mode is, for cache keys and settings: "auto", "output" or
// "junit:PATH" (an empty report is "auto").
std::string report_mode(const std::string& report);

// 16 random hex digits.
std::string random_nonce();

// The unittest driver's Python source (stdlib only; no single quote in it, so
// it can be passed with -c in single quotes). argv: REPORT_PATH ARGS...
const std::string& unittest_driver_source();

// When the runner the driver needs is not installed where the tests ran:
// Python's own line for `-m RUNNER` without the module ("/usr/bin/python3:
// No module named pytest"), else "". `runner` is EvidencePlan::runner.
std::string missing_runner_line(std::string_view output, const std::string& runner);

// The reason a run without the driver's report gets.
inline constexpr const char* kDriverReportMissing =
    "the runner's report was not written (the test process ended before its runner finished)";

}  // namespace lazyagent
