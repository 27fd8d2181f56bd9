#include "report/report_file.h"

#include <ctime>

#include "pipeline/apply_run.h"
#include "report/report_data.h"
#include "report/report_page.h"

namespace lazyagent {

Result<HtmlReportWritten> write_html_report(const std::string& out_dir, const std::string& path, const RunStore& store) {
  auto data = load_report_data(out_dir, [&store](const std::string& run_id) -> Result<std::string> {
    auto proven = load_proven_change(store, run_id);
    if (!proven) return proven.error();
    return proven->diff;
  });
  if (!data) return data.error();
  char stamp[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (gmtime_r(&now, &tm)) std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", &tm);
  const std::string html = render_report_html(*data, ReportPageOptions{stamp});
  if (auto st = write_file_atomic(path, html); !st) return st.error().context("writing the report " + path);
  HtmlReportWritten w;
  w.tasks = data->tasks.size();
  w.bytes = html.size();
  for (const auto& t : data->tasks) w.diffs += t.diff.empty() ? 0 : 1;
  return w;
}

}  // namespace lazyagent
