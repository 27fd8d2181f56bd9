// The eval report: one self-contained HTML page (`eval --report html:PATH`,
// `lazyagent-oci report html OUT_DIR PATH`).
//
// Layout: an overview (the decisive figures: resolved rate, suspicious ones
// that passed, refusals by reason code, infra errors, isolation violations;
// counts per category as a table and a strip), charts (task durations, time
// per pipeline step per task, CPU and memory per task), then every task
// (report_task_html.h) with filter and sort controls.
//
// Self-contained and inert to its content: no external resource of any kind;
// a Content-Security-Policy meta (the first element of <head>) of
// default-src 'none' with the page's one <style> and one <script> allowed by
// their sha256 (report_assets.h), so nothing else runs, loads or connects,
// whatever the escaping (html_text.h) might have missed. The counts are
// summary.json's; each one is in an element with data-count="<name>" so a
// test can compare them. Pure.
#pragma once

#include <string>

#include "report/report_data.h"

namespace lazyagent {

struct ReportPageOptions {
  std::string generated_at;  // shown in the header ("" = not shown)
};

std::string render_report_html(const ReportData& data, const ReportPageOptions& options);

// The policy the page carries (for tests and docs).
std::string report_csp();

}  // namespace lazyagent
