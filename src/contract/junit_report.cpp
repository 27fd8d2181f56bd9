#include "contract/junit_report.h"

#include <sstream>

#include <pugixml.hpp>

namespace lazyagent {
namespace {

class CaseWalker : public pugi::xml_tree_walker {
 public:
  bool for_each(pugi::xml_node& node) override {
    if (node.type() != pugi::node_element || std::string_view(node.name()) != "testcase") return true;
    if (++seen_ > kMaxJunitCases) return false;  // stops the walk
    const std::string name = node.attribute("name").value();
    const std::string cls = node.attribute("classname").value();
    const std::string id = cls.empty() || cls == name ? name : cls + "." + name;
    TestOutcome o = TestOutcome::kPassed;
    if (node.child("failure") || node.child("error")) o = TestOutcome::kFailed;
    else if (node.child("skipped")) o = TestOutcome::kSkipped;
    if (id.empty()) {
      unnamed_ = true;
      return true;
    }
    auto [it, inserted] = index_.emplace(id, cases_.size());
    if (inserted) cases_.push_back({id, o});
    else if (o == TestOutcome::kFailed) cases_[it->second].outcome = o;  // a repeated id: its worst
    return true;
  }
  std::size_t seen_ = 0;
  bool unnamed_ = false;
  std::map<std::string, std::size_t> index_;
  std::vector<TestCaseResult> cases_;
};

constexpr std::string_view kJunitBegin = "lazyagent-oci junit-report: ";
constexpr std::string_view kJunitEnd = "\nlazyagent-oci junit-report end\n";

}  // namespace

std::string test_command_with_junit(const std::string& test_command, const std::string& path, bool remove_after) {
  const std::string q = "'" + path + "'";
  return "rm -f " + q + "\n(\n" + test_command + "\n)\nlazyagent_rc=$?\n" +
         "if [ -f " + q + " ]; then printf '\\n%s%s\\n' '" + std::string(kJunitBegin) + "' \"$(wc -c < " + q +
         ")\"; cat " + q + "; else printf '\\n%s%s\\n' '" + std::string(kJunitBegin) + "' missing; fi\n" +
         "printf '\\n%s\\n' 'lazyagent-oci junit-report end'\n" + (remove_after ? "rm -f " + q + "\n" : "") +
         "exit $lazyagent_rc\n";
}

JunitDump take_junit_dump(std::string* output) {
  JunitDump d;
  const std::string marker = "\n" + std::string(kJunitBegin);
  const std::size_t at = output->rfind(marker);
  if (at == std::string::npos) {
    d.error = "no report block in the output (the test command was cut or killed before it was printed)";
    return d;
  }
  d.found = true;
  const std::size_t line_end = output->find('\n', at + marker.size());
  const std::string value = output->substr(at + marker.size(), line_end == std::string::npos
                                                                   ? std::string::npos
                                                                   : line_end - at - marker.size());
  std::size_t erase_to = output->size();
  if (value == "missing") {
    d.missing = true;
    d.error = "the test command wrote no report file";
    const std::size_t end = output->find(kJunitEnd, at);
    if (end != std::string::npos) erase_to = end + kJunitEnd.size();
  } else if (value.empty() || value.size() > 10 || value.find_first_not_of("0123456789") != std::string::npos ||
             line_end == std::string::npos) {
    d.error = "the report block in the output is malformed";
  } else {
    const std::size_t n = std::stoul(value);
    const std::size_t body = line_end + 1;
    if (n > kMaxJunitBytes) {
      d.error = "the report is " + value + " bytes, over the limit of " + std::to_string(kMaxJunitBytes);
    } else if (output->size() < body + n || output->compare(body + n, kJunitEnd.size(), kJunitEnd) != 0) {
      d.error = "the report (" + value + " bytes) was cut from the output: the test output was over "
                "limits.log_bytes and the report did not fit in its kept tail";
    } else {
      d.xml = output->substr(body, n);
      erase_to = body + n + kJunitEnd.size();
    }
  }
  output->replace(at, erase_to - at, erase_to < output->size() ? "\n" : "");
  return d;
}

std::string junit_xml_of(const TestCases& cases, const std::string& suite, bool passed, const std::string& reason) {
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node root = doc.append_child("testsuites");
  pugi::xml_node ts = root.append_child("testsuite");
  long failures = 0, skipped = 0;
  for (const auto& c : cases.cases) {
    failures += c.outcome == TestOutcome::kFailed;
    skipped += c.outcome == TestOutcome::kSkipped;
  }
  ts.append_attribute("name") = suite.c_str();
  ts.append_attribute("tests") = static_cast<long long>(cases.cases.size());
  ts.append_attribute("failures") = static_cast<long long>(failures);
  ts.append_attribute("errors") = 0;
  ts.append_attribute("skipped") = static_cast<long long>(skipped);
  pugi::xml_node props = ts.append_child("properties");
  auto prop = [&](const char* name, const std::string& value) {
    pugi::xml_node p = props.append_child("property");
    p.append_attribute("name") = name;
    p.append_attribute("value") = value.c_str();
  };
  prop("verdict", passed ? "passed" : "failed");
  if (!reason.empty()) prop("reason", reason);
  prop("complete", cases.complete ? "true" : "false");
  for (const auto& c : cases.cases) {
    pugi::xml_node tc = ts.append_child("testcase");
    tc.append_attribute("name") = c.id.c_str();
    if (c.outcome == TestOutcome::kFailed) tc.append_child("failure");
    if (c.outcome == TestOutcome::kSkipped) tc.append_child("skipped");
  }
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

JunitReport parse_junit_xml(std::string_view xml) {
  JunitReport out;
  if (xml.size() > kMaxJunitBytes) {
    out.error = "the JUnit report is " + std::to_string(xml.size()) + " bytes, over the limit of " +
                std::to_string(kMaxJunitBytes);
    return out;
  }
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default);
  if (!parsed) {
    out.error = std::string("the JUnit report is not well-formed XML: ") + parsed.description() +
                " at byte " + std::to_string(parsed.offset);
    return out;
  }
  const std::string root = doc.document_element().name();
  if (root != "testsuites" && root != "testsuite") {
    out.error = "the JUnit report's root element is <" + root + ">, not <testsuites> or <testsuite>";
    return out;
  }
  CaseWalker walker;
  doc.traverse(walker);
  if (walker.seen_ > kMaxJunitCases) {
    out.error = "the JUnit report has more than " + std::to_string(kMaxJunitCases) + " testcases";
    return out;
  }
  if (walker.unnamed_) {
    out.error = "the JUnit report has a <testcase> without a name";
    return out;
  }
  RunnerReport& r = out.report;
  for (const auto& c : walker.cases_) {
    (c.outcome == TestOutcome::kPassed ? r.passed : c.outcome == TestOutcome::kFailed ? r.failed : r.skipped) += 1;
  }
  r.runner = "junit";
  r.tests_run = r.passed + r.failed;
  r.success = r.failed == 0 && r.passed > 0;
  r.found = true;
  out.cases.format = "junit";
  out.cases.complete = true;
  out.cases.cases = std::move(walker.cases_);
  return out;
}

}  // namespace lazyagent
