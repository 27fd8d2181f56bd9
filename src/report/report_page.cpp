#include "report/report_page.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "report/html_text.h"
#include "report/report_assets.h"
#include "report/report_svg.h"
#include "report/report_task_html.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// A count summary.json holds for a group ({"count": N}), else -1.
long page_summary_count(const json& summary, const std::string& key) {
  if (!summary.contains(key) || !summary[key].is_object()) return -1;
  const json& c = summary[key]["count"];
  return c.is_number() ? c.get<long>() : -1;
}

long page_summary_number(const json& summary, const std::string& key) {
  return summary.contains(key) && summary[key].is_number() ? summary[key].get<long>() : 0;
}

std::string page_figure(const std::string& name, const std::string& value, const std::string& label, bool alert) {
  return std::string("<div class=\"figure") + (alert ? " alert" : "") + "\"><span class=\"v\" data-count=\"" + name +
         "\">" + value + "</span><span class=\"l\">" + label + "</span></div>";
}

std::string page_task_links(const ReportData& d, const std::vector<std::size_t>& indexes) {
  if (indexes.empty()) return "<p class=\"note\">none</p>";
  std::string o = "<ul class=\"ids\">";
  for (std::size_t i : indexes) {
    const ReportTask& t = d.tasks[i];
    o += "<li><a href=\"#" + report_task_anchor(i) + "\"><code>" + html_text(t.id) + "</code></a>" +
         (t.reason.empty() ? "" : ": " + html_text(t.reason)) + "</li>";
  }
  return o + "</ul>";
}

std::vector<std::size_t> page_tasks_where(const ReportData& d, bool (*pred)(const ReportTask&)) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < d.tasks.size(); ++i) {
    if (pred(d.tasks[i])) out.push_back(i);
  }
  return out;
}

std::string page_overview(const ReportData& d) {
  const json& s = d.summary;
  const long total = page_summary_number(s, "total");
  const long passed = std::max(0L, page_summary_count(s, "passed"));
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f%%", total > 0 ? 100.0 * static_cast<double>(passed) / static_cast<double>(total) : 0.0);
  const long infra = std::max(0L, page_summary_count(s, "infra_error"));
  long isolation = page_summary_count(s, "isolation_violation");
  if (isolation < 0) {  // an eval from before the category existed: the tasks' own word
    isolation = static_cast<long>(page_tasks_where(d, [](const ReportTask& t) { return t.isolation_violation; }).size());
  }
  const long susp_passed = std::max(0L, page_summary_count(s, "suspicious_passed"));
  std::string o = "<section id=\"overview\"><h2>Overview</h2><div class=\"figures\">";
  o += page_figure("total", std::to_string(total), "tasks", false);
  o += page_figure("resolved_rate", rate, "resolved (passed " + std::to_string(passed) + " of " + std::to_string(total) + ")", false);
  o += page_figure("suspicious_passed", std::to_string(susp_passed), "suspicious that passed", susp_passed > 0);
  o += page_figure("infra_error", std::to_string(infra), "infrastructure errors", infra > 0);
  o += page_figure("isolation_violation", std::to_string(isolation), "isolation violations", isolation > 0);
  o += page_figure("wall_ms", human_ms(static_cast<double>(page_summary_number(s, "wall_ms"))),
                   "wall time, " + std::to_string(page_summary_number(s, "jobs")) + " job(s)", false);
  long task_ms = 0;
  for (const auto& t : d.tasks) task_ms += t.ms;
  o += page_figure("task_ms", human_ms(static_cast<double>(task_ms)),
                   "task time summed (mean " + human_ms(d.tasks.empty() ? 0.0 : static_cast<double>(task_ms) / static_cast<double>(d.tasks.size())) + ")", false);
  o += "</div>";

  // Counts per category: summary.json's (a category only the tasks name is counted from them).
  std::vector<SvgPart> parts;
  std::string table = "<table id=\"counts\"><tr><th>category</th><th>tasks</th></tr>";
  for (const auto& c : d.categories) {
    long n = page_summary_count(s, c);
    if (n < 0) n = static_cast<long>(std::count_if(d.tasks.begin(), d.tasks.end(), [&](const ReportTask& t) { return t.category == c; }));
    parts.push_back({c, static_cast<double>(n), report_category_color(c)});
    table += "<tr><td><span class=\"badge k" + std::to_string(report_category_color(c)) + "\">" + html_text(c) +
             "</span></td><td class=\"count\" data-count=\"" + html_attr(c) + "\">" + std::to_string(n) + "</td></tr>";
  }
  for (const char* side : {"skipped", "suspicious"}) {
    const long n = page_summary_count(s, side);
    if (n >= 0) {
      table += std::string("<tr><td>(") + side + ")</td><td class=\"count\" data-count=\"" + side + "\">" +
               std::to_string(n) + "</td></tr>";
    }
  }
  o += "<h3>Tasks per category</h3>" + svg_strip(parts, "tasks per category") + table + "</table>";

  o += "<h3>Suspicious, and passed: read these first</h3>" +
       page_task_links(d, page_tasks_where(d, report_task_suspicious_passed));
  // Refusals by reason code (a task counts once under each of its codes).
  std::map<std::string, std::vector<std::size_t>> by_code;
  for (std::size_t i = 0; i < d.tasks.size(); ++i) {
    if (d.tasks[i].category != "refused") continue;
    for (const auto& code : d.tasks[i].reason_codes) by_code[code].push_back(i);
  }
  o += "<h3>Refusals by reason code</h3>";
  if (by_code.empty()) {
    o += "<p class=\"note\">none</p>";
  } else {
    o += "<table id=\"refusals\"><tr><th>reason code</th><th>tasks</th><th></th></tr>";
    for (const auto& [code, idx] : by_code) {
      std::string links;
      for (std::size_t i : idx) {
        links += (links.empty() ? "" : ", ") + std::string("<a href=\"#") + report_task_anchor(i) + "\">" +
                 html_text(d.tasks[i].id) + "</a>";
      }
      o += "<tr><td><code>" + html_text(code) + "</code></td><td class=\"num\">" + std::to_string(idx.size()) +
           "</td><td>" + links + "</td></tr>";
    }
    o += "</table>";
  }
  o += "<h3>Infrastructure errors</h3>" +
       page_task_links(d, page_tasks_where(d, [](const ReportTask& t) { return t.category == "infra_error"; }));
  o += "<h3>Isolation violations</h3>" +
       page_task_links(d, page_tasks_where(d, [](const ReportTask& t) { return t.isolation_violation; }));
  if (!d.problems.empty()) {
    o += "<h3>Problems reading the eval</h3><ul class=\"problems\">";
    for (const auto& p : d.problems) o += "<li>" + html_text(p) + "</li>";
    o += "</ul>";
  }
  return o + "</section>";
}

std::string page_charts(const ReportData& d) {
  std::string o = "<section id=\"charts\"><h2>Where the time went</h2>";
  std::vector<double> durations;
  for (const auto& t : d.tasks) {
    if (t.category != "not_run") durations.push_back(static_cast<double>(t.ms));
  }
  o += "<h3>Task durations</h3>" +
       svg_histogram(durations, std::clamp(static_cast<int>(durations.size()), 1, 20), "s", 1000.0, "task durations");
  // Time per pipeline step, one stacked column per task (slowest first).
  std::vector<std::string> steps;
  for (const auto& t : d.tasks) {
    for (const auto& [step, ms] : t.timings) {
      if (std::find(steps.begin(), steps.end(), step) == steps.end()) steps.push_back(step);
    }
  }
  std::vector<std::pair<long, SvgColumn>> cols;
  for (const auto& t : d.tasks) {
    if (t.timings.empty()) continue;
    SvgColumn c{t.id, std::vector<double>(steps.size(), 0)};
    long sum = 0;
    for (const auto& [step, ms] : t.timings) {
      c.values[static_cast<std::size_t>(std::find(steps.begin(), steps.end(), step) - steps.begin())] += static_cast<double>(ms);
      sum += ms;
    }
    cols.emplace_back(sum, std::move(c));
  }
  std::stable_sort(cols.begin(), cols.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // Past kMaxColumns tasks, each column is the mean of a run of neighbours (an
  // SVG element per step per task made a 500-task page slow to open).
  constexpr std::size_t kMaxColumns = 100;
  const std::size_t per = (cols.size() + kMaxColumns - 1) / kMaxColumns;
  std::vector<SvgColumn> columns;
  for (std::size_t i = 0; i < cols.size(); i += std::max<std::size_t>(per, 1)) {
    const std::size_t end = std::min(cols.size(), i + std::max<std::size_t>(per, 1));
    if (end - i == 1) {
      columns.push_back(std::move(cols[i].second));
      continue;
    }
    SvgColumn mean{"tasks " + std::to_string(i + 1) + "-" + std::to_string(end) + " by time (mean)",
                   std::vector<double>(steps.size(), 0)};
    for (std::size_t j = i; j < end; ++j) {
      for (std::size_t k = 0; k < steps.size(); ++k) mean.values[k] += cols[j].second.values[k] / static_cast<double>(end - i);
    }
    columns.push_back(std::move(mean));
  }
  o += std::string("<h3>Time per pipeline step, per task (slowest first") +
       (per > 1 ? ", each column the mean of " + std::to_string(per) + " tasks" : "") + ")</h3>" +
       svg_stacked_columns(steps, columns, "ms", "time per pipeline step per task");
  // CPU and memory per task from the final run's resource figures.
  std::vector<SvgPart> cpu, mem;
  for (const auto& t : d.tasks) {
    const int color = report_category_color(t.category);
    if (t.cpu_ms) cpu.push_back({t.id, static_cast<double>(*t.cpu_ms), color});
    if (t.memory_peak_bytes) mem.push_back({t.id, static_cast<double>(*t.memory_peak_bytes) / (1024.0 * 1024.0), color});
  }
  const std::size_t shown = 40;
  auto top = [&](std::vector<SvgPart> v) {
    std::stable_sort(v.begin(), v.end(), [](const SvgPart& a, const SvgPart& b) { return a.value > b.value; });
    if (v.size() > shown) v.resize(shown);
    return v;
  };
  auto heading = [&](const char* what, std::size_t n) {
    return std::string("<h3>") + what + " per task" +
           (n > shown ? " (the " + std::to_string(shown) + " highest of " + std::to_string(n) + ")" : "") + "</h3>";
  };
  o += heading("CPU time", cpu.size()) + svg_bars(top(cpu), "ms", "CPU time per task");
  o += heading("Memory peak", mem.size()) + svg_bars(top(mem), "MiB", "memory peak per task");
  return o + "</section>";
}

std::string page_filters(const ReportData& d) {
  std::string o = "<form id=\"filters\"><label>category <select id=\"f-cat\"><option value=\"\">all</option>";
  for (const auto& c : d.categories) o += "<option value=\"" + html_attr(c) + "\">" + html_text(c) + "</option>";
  o += "</select></label><label>reason code <select id=\"f-reason\"><option value=\"\">any</option>";
  std::set<std::string> codes;
  for (const auto& t : d.tasks) codes.insert(t.reason_codes.begin(), t.reason_codes.end());
  for (const auto& c : codes) o += "<option value=\"" + html_attr(c) + "\">" + html_text(c) + "</option>";
  o += "</select></label><label><input type=\"checkbox\" id=\"f-susp\"> suspicious only</label>"
       "<label>at least <input type=\"number\" id=\"f-min\" min=\"0\" step=\"0.1\" size=\"5\"> s</label>"
       "<label>sort <select id=\"f-sort\"><option value=\"triage\">suspicious passes, then by category</option>"
       "<option value=\"slowest\">slowest first</option><option value=\"fastest\">fastest first</option>"
       "<option value=\"file\">task file order</option><option value=\"id\">task id</option></select></label>"
       "<span id=\"shown\"></span></form>";
  return o;
}

}  // namespace

std::string report_csp() {
  return "default-src 'none'; script-src " + csp_hash_source(report_script()) + "; style-src " +
         csp_hash_source(report_css()) + "; img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'";
}

std::string render_report_html(const ReportData& d, const ReportPageOptions& options) {
  std::string o;
  o.reserve(4096 + d.tasks.size() * 4096);
  o += "<!DOCTYPE html>\n<html lang=\"en\"><head>\n<meta charset=\"utf-8\">\n"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"" + report_csp() + "\">\n<meta name=\"referrer\" content=\"no-referrer\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Eval report: " +
       html_text(d.out_dir) + "</title>\n<style>" + report_css() + "</style>\n</head><body>\n";
  o += "<h1>Eval report</h1><p class=\"meta-line\">lazyagent-oci eval of <code>" + html_text(d.out_dir) + "</code>" +
       (options.generated_at.empty() ? "" : ", report made " + html_text(options.generated_at)) +
       (d.summary.value("interrupted", false) ? ", <strong>interrupted</strong>" : "") + "</p>\n";
  o += page_overview(d) + "\n" + page_charts(d) + "\n";
  o += "<section id=\"task-list\"><h2>Tasks</h2>" + page_filters(d) + "<div id=\"tasks\">\n";
  // Default order: the suspicious ones that passed, then by category (what needs reading first), then file order.
  std::vector<std::size_t> order(d.tasks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    auto rank = [&](std::size_t i) {
      return report_task_suspicious_passed(d.tasks[i]) ? 0 : report_category_rank(d.tasks[i].category);
    };
    return rank(a) < rank(b);
  });
  for (std::size_t i : order) o += render_task_html(d.tasks[i], i);
  o += "</div></section>\n<script>" + report_script() + "</script>\n</body></html>\n";
  return o;
}

}  // namespace lazyagent
