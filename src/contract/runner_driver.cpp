#include "contract/runner_driver.h"

#include <cctype>
#include <cstdio>
#include <random>
#include <sstream>
#include <string_view>

#include "contract/junit_report.h"

namespace lazyagent {

const char* evidence_name(EvidenceKind k) {
  switch (k) {
    case EvidenceKind::kJunit: return "junit";
    case EvidenceKind::kDriver: return "driver";
    case EvidenceKind::kOutput: break;
  }
  return "output";
}

std::string report_mode(const std::string& report) { return report.empty() ? "auto" : report; }

std::string random_nonce() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

const std::string& unittest_driver_source() {
  // Runs unittest exactly as `python3 -m unittest ARGS` does (unittest.main
  // with module=None), with a result class that records each test's outcome
  // (a failing subtest fails its test), and writes the report only after the
  // run has finished; its exit status is unittest's (0 when successful).
  static const std::string src = R"py(import os, sys, unittest


def _lazyagent_unittest_driver():
    out = sys.argv[1]
    sys.argv[:] = [os.path.basename(sys.executable or "python3") + " -m unittest"] + sys.argv[2:]
    seen, order = {}, []
    rank = {"passed": 0, "skipped": 1, "failure": 2, "error": 3}

    def note(test, outcome):
        tid = getattr(test, "test_case", test).id()
        if tid not in seen:
            order.append(tid)
            seen[tid] = outcome
        elif rank[outcome] > rank[seen[tid]]:
            seen[tid] = outcome

    class Result(unittest.TextTestResult):
        def addSuccess(self, test):
            super(Result, self).addSuccess(test)
            note(test, "passed")

        def addFailure(self, test, err):
            super(Result, self).addFailure(test, err)
            note(test, "failure")

        def addError(self, test, err):
            super(Result, self).addError(test, err)
            note(test, "error")

        def addSkip(self, test, reason):
            super(Result, self).addSkip(test, reason)
            note(test, "skipped")

        def addExpectedFailure(self, test, err):
            super(Result, self).addExpectedFailure(test, err)
            note(test, "passed")

        def addUnexpectedSuccess(self, test):
            super(Result, self).addUnexpectedSuccess(test)
            note(test, "failure")

        def addSubTest(self, test, subtest, err):
            super(Result, self).addSubTest(test, subtest, err)
            if err is not None:
                note(test, "failure" if issubclass(err[0], test.failureException) else "error")

    class Runner(unittest.TextTestRunner):
        resultclass = Result

    result = unittest.main(module=None, argv=sys.argv, exit=False, testRunner=Runner).result

    def quoteattr(s):
        s = "".join(c if c >= " " or c == "\t" else "?" for c in s)
        return "\"" + s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;") + "\""

    child = {"passed": "", "skipped": "<skipped/>", "failure": "<failure/>", "error": "<error/>"}
    lines = ["<?xml version=\"1.0\" encoding=\"utf-8\"?>",
             "<testsuites><testsuite name=\"unittest\" tests=\"%d\">" % len(order)]
    for tid in order:
        cls, _, name = tid.rpartition(".")
        if "(" in tid or " " in tid:
            cls, name = "", tid
        lines.append("<testcase classname=%s name=%s>%s</testcase>"
                     % (quoteattr(cls), quoteattr(name), child[seen[tid]]))
    lines.append("</testsuite></testsuites>")
    with open(out, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write("\n".join(lines) + "\n")
    sys.exit(0 if result.wasSuccessful() else 1)


_lazyagent_unittest_driver()
)py";
  return src;
}

namespace {

// A word of a simple command: no character a shell treats specially.
bool is_simple_word(std::string_view w) {
  for (const char c : w) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("-_./=:,+@%").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return !w.empty();
}

// python, python3, python3.N, or a path to one (/usr/bin/python3).
bool is_python_interpreter(std::string w) {
  if (const auto slash = w.rfind('/'); slash != std::string::npos) w = w.substr(slash + 1);
  if (w == "python" || w == "python3") return true;
  if (w.rfind("python3.", 0) != 0 || w.size() == 8) return false;
  return w.find_first_not_of("0123456789", 8) == std::string::npos;
}

std::string words_from(const std::vector<std::string>& words, std::size_t from) {
  std::string s;
  for (std::size_t i = from; i < words.size(); ++i) s += " " + words[i];
  return s;
}

constexpr const char* kNotSimple =
    "the test command is not a simple `python3 -m unittest ...`, `python3 -m pytest ...` or `pytest ...` "
    "command (no shell syntax), so the runner's output is the evidence";

}  // namespace

EvidencePlan plan_evidence(const std::string& test_command, const std::string& report, const std::string& nonce) {
  EvidencePlan p;
  p.command = test_command;
  if (report.rfind("junit:", 0) == 0) {
    p.kind = EvidenceKind::kJunit;
    p.report_path = report.substr(6);
    p.command = test_command_with_junit(test_command, p.report_path);
    return p;
  }
  if (report == "output") return p;
  // auto: recognise the command, word by word.
  std::vector<std::string> w;
  {
    std::istringstream in(test_command);
    for (std::string x; in >> x;) w.push_back(x);
  }
  bool simple = !w.empty() && test_command.find('\n') == std::string::npos;
  for (const auto& x : w) simple = simple && is_simple_word(x);
  if (!simple) {
    p.note = kNotSimple;
    return p;
  }
  std::size_t args = 0;  // first word of the runner's own arguments
  if (w[0] == "pytest" || w[0] == "py.test") {
    p.runner = "pytest";
    args = 1;
  } else if (is_python_interpreter(w[0]) && w.size() >= 3 && w[1] == "-m" && (w[2] == "pytest" || w[2] == "unittest")) {
    p.runner = w[2];
    args = 3;
  } else {
    p.note = kNotSimple;
    return p;
  }
  const std::string path = "/tmp/.lazyagent-report-" + nonce + ".xml";
  std::string cmd;
  if (p.runner == "pytest") {
    std::size_t dashdash = w.size();
    for (std::size_t i = args; i < w.size(); ++i) {
      const std::string& x = w[i];
      if (x == "--" && dashdash == w.size()) dashdash = i;
      if (x == "-pno:junitxml" || (x == "-p" && i + 1 < w.size() && w[i + 1] == "no:junitxml")) {
        p.runner.clear();
        p.note = "the test command disables pytest's junitxml plugin (-p no:junitxml), so the runner's output "
                 "is the evidence";
        return p;
      }
    }
    for (std::size_t i = 0; i < dashdash; ++i) cmd += (i ? " " : "") + w[i];
    cmd += " --junitxml=" + path;
    cmd += words_from(w, dashdash);
  } else {
    cmd = w[0] + " -c '" + unittest_driver_source() + "' " + path + words_from(w, args);
  }
  p.kind = EvidenceKind::kDriver;
  p.report_path = path;
  p.command = test_command_with_junit(cmd, path, true);
  return p;
}

std::string missing_runner_line(std::string_view output, const std::string& runner) {
  if (runner.empty()) return "";
  const std::string said = ": No module named " + runner;
  for (std::size_t at = output.find(said); at != std::string_view::npos; at = output.find(said, at + 1)) {
    const std::size_t end = at + said.size();  // the words must end their line
    if (end < output.size() && output[end] != '\n' && output[end] != '\r') continue;
    const std::size_t nl = at == 0 ? std::string_view::npos : output.rfind('\n', at - 1);
    const std::size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    if (at > start && end - start < 512) return std::string(output.substr(start, end - start));
  }
  return "";
}

}  // namespace lazyagent
