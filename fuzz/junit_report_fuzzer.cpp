// Fuzz target: JUnit XML written by code under test (src/junit_report.*), and
// the report block taken out of the sandbox's output.
//
// Input: the bytes are both the XML document and the output holding a block.
// Checked beyond crashes:
//   - an error and a found report never come together;
//   - counts equal the listed cases (passed + failed + skipped), never negative;
//   - success only with no failure and at least one pass;
//   - take_junit_dump only shrinks the output, and xml is set only without error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "contract/junit_report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const lazyagent::JunitReport r = lazyagent::parse_junit_xml(text);
  FUZZ_CHECK(r.error.empty() == r.report.found, "a report or an error, never both");
  const auto& rep = r.report;
  FUZZ_CHECK(rep.passed >= 0 && rep.failed >= 0 && rep.skipped >= 0, "counts are never negative");
  FUZZ_CHECK(static_cast<std::size_t>(rep.passed + rep.failed + rep.skipped) == r.cases.cases.size(),
             "counts are the listed cases");
  if (rep.success) FUZZ_CHECK(rep.failed == 0 && rep.passed > 0, "success means passes and no failure");

  std::string out(text);
  const lazyagent::JunitDump d = lazyagent::take_junit_dump(&out);
  FUZZ_CHECK(out.size() <= size, "taking the block never grows the output");
  if (!d.xml.empty()) FUZZ_CHECK(d.error.empty() && d.found, "xml only from a whole block");
  return 0;
}
