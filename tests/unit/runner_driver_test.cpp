// The evidence plan (runner_driver.h): which commands are recognised, what the
// sandbox runs for them, and the wrapped commands run for real with this
// machine's python3 and Debian's pytest (scripts/setup.sh installs both) on a
// small suite: the report is read back by the same code the pipeline uses,
// and a process that ends before its runner finishes leaves none.
#include "catch_compat.h"

#include <stdio.h>
#include <sys/wait.h>

#include <fstream>
#include <string>

#include "contract/junit_report.h"
#include "contract/runner_driver.h"
#include "contract/verdict.h"
#include "unit_tmp.h"

using namespace lazyagent;

namespace {

struct Ran {
  int exit_code = -1;
  std::string output;
};

// `command` run by /bin/sh in `dir`, stdout and stderr together.
Ran run_in(const std::string& dir, const std::string& command) {
  Tmp script_dir;
  const std::string script = script_dir.path + "/cmd.sh";
  std::ofstream(script) << command;
  Ran r;
  FILE* p = popen(("cd '" + dir + "' && PYTHONDONTWRITEBYTECODE=1 /bin/sh " + script + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const char* kSuite =
    "import unittest\n"
    "import calc\n"
    "class CalcTest(unittest.TestCase):\n"
    "    def test_add(self):\n"
    "        self.assertEqual(calc.add(2, 3), 5)\n"
    "    def test_sub(self):\n"
    "        self.assertEqual(calc.sub(3, 2), 1)\n"
    "    def test_parts(self):\n"
    "        for i in range(3):\n"
    "            with self.subTest(i=i):\n"
    "                self.assertEqual(calc.add(0, i), i)\n"
    "    @unittest.skip('not yet')\n"
    "    def test_later(self):\n"
    "        pass\n";

const char* kCalcOk = "def add(a, b):\n    return a + b\ndef sub(a, b):\n    return a - b\n";

struct Judged {
  Ran ran;
  JunitDump dump;
  JunitReport junit;
  Verdict verdict;
};

Judged judged(const std::string& dir, const EvidencePlan& plan) {
  Judged j;
  j.ran = run_in(dir, plan.command);
  std::string out = j.ran.output;
  j.dump = take_junit_dump(&out);
  if (j.dump.error.empty()) j.junit = parse_junit_xml(j.dump.xml);
  RunOutcome o;
  o.exit_code = j.ran.exit_code;
  j.verdict = judge_report(o, j.junit.report, j.dump.missing ? kDriverReportMissing : j.dump.error);
  return j;
}

std::string listed(const TestCases& t) {
  std::string s;
  for (const auto& c : t.cases) s += (s.empty() ? "" : " ") + c.id + "=" + outcome_name(c.outcome);
  return s;
}

}  // namespace

TEST_CASE("driver: which commands are recognised, and why the others keep the output", "[driver]") {
  const std::string n = "0123abcd";
  const std::string path = "/tmp/.lazyagent-report-0123abcd.xml";
  for (const char* cmd : {"python3 -m unittest -v", "python -m unittest", "python3.11 -m unittest discover -s tests -v",
                          "  python3   -m unittest   test_calc  "}) {
    const EvidencePlan p = plan_evidence(cmd, "", n);
    INFO(cmd);
    CHECK(p.kind == EvidenceKind::kDriver);
    CHECK(p.runner == "unittest");
    CHECK(p.report_path == path);
    CHECK(p.note.empty());
    CHECK(evidence_name(p.kind) == std::string("driver"));
  }
  for (const char* cmd : {"pytest", "python3 -m pytest -q", "py.test -x tests", "/usr/bin/python3 -m pytest"}) {
    const EvidencePlan p = plan_evidence(cmd, "auto", n);
    INFO(cmd);
    CHECK(p.kind == EvidenceKind::kDriver);
    CHECK(p.runner == "pytest");
  }
  // pytest: the option goes after the user's arguments, before a "--".
  CHECK(plan_evidence("python3 -m pytest -q tests", "", n).command.find("\n(\npython3 -m pytest -q tests --junitxml=" +
                                                                          path + "\n)\n") != std::string::npos);
  CHECK(plan_evidence("pytest -q -- -k", "", n).command.find("\n(\npytest -q --junitxml=" + path + " -- -k\n)\n") !=
        std::string::npos);
  // Shell syntax, other runners, interpreter options: the output decides.
  const std::string not_simple =
      "the test command is not a simple `python3 -m unittest ...`, `python3 -m pytest ...` or `pytest ...` command "
      "(no shell syntax), so the runner's output is the evidence";
  for (const char* cmd : {"python3 -m unittest -v; true", "cd tests && pytest", "pytest $ARGS", "pytest 'a b'",
                          "python3 -m unittest -v 2>&1", "PYTHONPATH=src pytest", "python3 -X dev -m unittest",
                          "go test ./...", "python3 -m unittest\npython3 -m unittest", "python2 -m unittest",
                          "python3x -m unittest", "/usr/bin/env python3 -m unittest", "tox", ""}) {
    const EvidencePlan p = plan_evidence(cmd, "", n);
    INFO(cmd);
    CHECK(p.kind == EvidenceKind::kOutput);
    CHECK(p.command == cmd);
    CHECK(p.note == not_simple);
  }
  for (const char* cmd : {"pytest -p no:junitxml", "python3 -m pytest -pno:junitxml -q"}) {
    const EvidencePlan p = plan_evidence(cmd, "", n);
    CHECK(p.kind == EvidenceKind::kOutput);
    CHECK(p.note ==
          "the test command disables pytest's junitxml plugin (-p no:junitxml), so the runner's output is the evidence");
  }
  // report: output and report: junit:PATH are what they say, for any command.
  const EvidencePlan out = plan_evidence("python3 -m unittest -v", "output", n);
  CHECK(out.kind == EvidenceKind::kOutput);
  CHECK(out.command == "python3 -m unittest -v");
  CHECK(out.note.empty());
  const EvidencePlan junit = plan_evidence("python3 -m pytest --junitxml=r.xml", "junit:r.xml", n);
  CHECK(junit.kind == EvidenceKind::kJunit);
  CHECK(junit.report_path == "r.xml");
  CHECK(junit.command == test_command_with_junit("python3 -m pytest --junitxml=r.xml", "r.xml"));
  CHECK(report_mode("") == "auto");
  CHECK(report_mode("output") == "output");
  // A fresh nonce per run.
  CHECK(random_nonce().size() == 16);
  CHECK(random_nonce() != random_nonce());
  CHECK(unittest_driver_source().find('\'') == std::string::npos);
}

TEST_CASE("driver: unittest through the driver, for real: every test recorded, subtests and skips", "[driver]") {
  Tmp dir;
  write(dir.path + "/test_calc.py", kSuite);
  const EvidencePlan plan = plan_evidence("python3 -m unittest -v", "", random_nonce());
  SECTION("passing") {
    write(dir.path + "/calc.py", kCalcOk);
    const Judged j = judged(dir.path, plan);
    INFO(j.ran.output);
    CHECK(j.ran.exit_code == 0);
    REQUIRE(j.dump.error.empty());
    CHECK(listed(j.junit.cases) ==
          "test_calc.CalcTest.test_add=passed test_calc.CalcTest.test_later=skipped "
          "test_calc.CalcTest.test_parts=passed test_calc.CalcTest.test_sub=passed");
    CHECK(j.verdict.passed);
    // The runner's own text is still there (shown, not judged), and the report is gone.
    CHECK(j.ran.output.find("Ran 4 tests") != std::string::npos);
    CHECK(run_in(dir.path, "test -e " + plan.report_path + " && echo left").output.empty());
  }
  SECTION("failing, a subtest too") {
    write(dir.path + "/calc.py", "def add(a, b):\n    return a - b\ndef sub(a, b):\n    return a - b\n");
    const Judged j = judged(dir.path, plan);
    INFO(j.ran.output);
    CHECK(j.ran.exit_code == 1);
    CHECK(listed(j.junit.cases) ==
          "test_calc.CalcTest.test_add=failed test_calc.CalcTest.test_later=skipped "
          "test_calc.CalcTest.test_parts=failed test_calc.CalcTest.test_sub=passed");
    CHECK(j.verdict.reason == "tests failed: the test command exited 1 (junit: 2 of 3 failed)");  // a skipped test is not run
  }
  SECTION("a module that prints a forged report and ends the process at import: no report") {
    write(dir.path + "/calc.py", std::string(kCalcOk) +
                                     "import os, sys\nsys.stderr.write('Ran 4 tests in 0.001s\\n\\nOK\\n')\n"
                                     "sys.stderr.flush()\nos._exit(0)\n");
    const Judged j = judged(dir.path, plan);
    INFO(j.ran.output);
    CHECK(j.ran.exit_code == 0);
    CHECK(j.dump.missing);
    CHECK_FALSE(j.verdict.passed);
    CHECK(j.verdict.reason ==
          "no test report: the runner's report was not written (the test process ended before its runner finished)");
    // The same run judged by its text alone passes: the forgery the driver stops.
    CHECK(judge(RunOutcome{0, false, 0, false}, j.ran.output).passed);
  }
  SECTION("sys.exit(0) at import is an import error the report records") {
    write(dir.path + "/calc.py", std::string(kCalcOk) + "import sys\nsys.exit(0)\n");
    const Judged j = judged(dir.path, plan);
    INFO(j.ran.output);
    CHECK(j.ran.exit_code == 1);
    CHECK(listed(j.junit.cases) == "unittest.loader._FailedTest.test_calc=failed");
    CHECK_FALSE(j.verdict.passed);
  }
}

TEST_CASE("driver: pytest with --junitxml, for real", "[driver]") {
  Tmp dir;
  write(dir.path + "/test_calc.py", kSuite);
  write(dir.path + "/calc.py", "def add(a, b):\n    return a - b\ndef sub(a, b):\n    return a - b\n");
  // Debian's pytest is /usr/bin/python3's (a python3 earlier on PATH may lack it).
  const EvidencePlan plan = plan_evidence("/usr/bin/python3 -m pytest -q -p no:cacheprovider", "", random_nonce());
  REQUIRE(plan.kind == EvidenceKind::kDriver);
  const Judged j = judged(dir.path, plan);
  INFO(j.ran.output);
  CHECK(j.ran.exit_code == 1);
  REQUIRE(j.dump.error.empty());
  CHECK(j.junit.report.tests_run == 3);  // one skipped
  CHECK(j.junit.report.failed == 2);
  CHECK_FALSE(j.verdict.passed);
  // An import that ends the process: pytest never writes its report.
  write(dir.path + "/calc.py", std::string(kCalcOk) + "import os\nprint('4 passed in 0.01s')\nos._exit(0)\n");
  const Judged forged = judged(dir.path, plan);
  INFO(forged.ran.output);
  CHECK(forged.ran.exit_code == 0);
  CHECK(forged.dump.missing);
  CHECK_FALSE(forged.verdict.passed);
}

TEST_CASE("missing_runner_line finds Python's own word that the runner module is not installed", "[runner_driver]") {
  CHECK(missing_runner_line("/usr/bin/python3: No module named pytest\n", "pytest") ==
        "/usr/bin/python3: No module named pytest");
  CHECK(missing_runner_line("collected 3 items\r\npython3: No module named pytest\r\n", "pytest") ==
        "python3: No module named pytest");
  // Another module missing inside the tests is a test's failure, not the runner's absence.
  CHECK(missing_runner_line("E   ModuleNotFoundError: No module named 'slug'\n", "pytest") == "");
  CHECK(missing_runner_line("/usr/bin/python3: No module named pytest_cov\n", "pytest") == "");
  CHECK(missing_runner_line("/usr/bin/python3: No module named pytest\n", "") == "");
}
