// The eval report written to a file: the out directory read
// (report_data.h), each task's proven diff taken from the run store when it
// still holds the run (`lazyagent-oci diff`'s source, checked against its
// hash), the page made (report_page.h) and written atomically. Used by
// `eval --report html:PATH` and `lazyagent-oci report html`.
#pragma once

#include <cstddef>
#include <string>

#include "store/run_store.h"
#include "util/result.h"

namespace lazyagent {

struct HtmlReportWritten {
  std::size_t tasks = 0;
  std::size_t bytes = 0;
  std::size_t diffs = 0;  // tasks whose diff the page shows
};

Result<HtmlReportWritten> write_html_report(const std::string& out_dir, const std::string& path, const RunStore& store);

}  // namespace lazyagent
