// One task of the eval report as HTML: a <details> element whose summary line
// says what happened (category, reason, time, suspicious) and whose body has
// the evidence (attempts, findings, triage linked to the test ids, the
// colored diff, the test output's tail, step timings, resources, and the
// commands that verify, show and apply the run). The data-* attributes are
// what the page's filter and sort read (report_page.h). Every string from the
// task is escaped (html_text.h); element ids are built from `index` only,
// never from the task's text. Pure.
#pragma once

#include <cstddef>
#include <string>

#include "report/report_data.h"

namespace lazyagent {

// "task-<index>": the anchor of the task's element.
std::string report_task_anchor(std::size_t index);

// True when the task passed with suspicious findings: listed first.
bool report_task_suspicious_passed(const ReportTask& t);

std::string render_task_html(const ReportTask& t, std::size_t index);

// A unified diff as <pre class="diff"> with one span per line, classed by
// kind (add, del, hunk, meta, ctx).
std::string render_diff_html(const std::string& diff);

}  // namespace lazyagent
