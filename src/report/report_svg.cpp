#include "report/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/html_text.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

// Text inside SVG: an HTML element such as the markers' <span> would end the
// SVG's foreign content in the parser, so markers are spelled out instead.
std::string svg_escaped(const std::string& text) { return html_attr(text); }

std::string svg_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string svg_open(int width, int height, const std::string& aria_label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(height) + "\" role=\"img\" aria-label=\"" + html_attr(aria_label) + "\">";
}

std::string svg_rect(double x, double y, double w, double h, int color, const std::string& title) {
  return "<rect class=\"k" + std::to_string(((color % 12) + 12) % 12) + "\" x=\"" + svg_num(x) + "\" y=\"" +
         svg_num(y) + "\" width=\"" + svg_num(std::max(w, 0.0)) + "\" height=\"" + svg_num(std::max(h, 0.0)) +
         "\"><title>" + svg_escaped(title) + "</title></rect>";
}

std::string svg_text(double x, double y, const std::string& text, const char* anchor = "start") {
  return "<text x=\"" + svg_num(x) + "\" y=\"" + svg_num(y) + "\" text-anchor=\"" + anchor + "\">" +
         svg_escaped(text) + "</text>";
}

std::string svg_fmt(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A legend: one swatch and "label (value)" per part, wrapped at `width`.
std::string svg_legend(const std::vector<SvgPart>& parts, double y, int width, double* bottom) {
  std::string o;
  double x = 0;
  for (const auto& p : parts) {
    const std::string text = p.label + " (" + svg_fmt(p.value) + ")";
    const double w = 22 + 7.2 * static_cast<double>(std::min<std::size_t>(text.size(), 60));
    if (x > 0 && x + w > width) {
      x = 0;
      y += 18;
    }
    o += svg_rect(x, y - 10, 12, 12, p.color, text) + svg_text(x + 16, y, text);
    x += w + 10;
  }
  *bottom = y + 6;
  return o;
}

}  // namespace

std::string human_ms(double ms) {
  char buf[32];
  if (ms >= 60000) {
    std::snprintf(buf, sizeof buf, "%.1f min", ms / 60000);
  } else if (ms >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1f s", ms / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  }
  return buf;
}

std::string human_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f KiB", bytes / 1024.0);
  }
  return buf;
}

std::string svg_strip(const std::vector<SvgPart>& parts, const std::string& aria_label, int width) {
  double total = 0;
  for (const auto& p : parts) total += std::max(p.value, 0.0);
  std::string body;
  double x = 0;
  for (const auto& p : parts) {
    if (p.value <= 0 || total <= 0) continue;
    const double w = width * p.value / total;
    body += svg_rect(x, 0, w, 28, p.color, p.label + ": " + svg_fmt(p.value));
    x += w;
  }
  if (total <= 0) body += svg_text(0, 20, "(nothing to show)");
  double bottom = 0;
  body += svg_legend(parts, 50, width, &bottom);
  return svg_open(width, static_cast<int>(bottom) + 4, aria_label) + body + "</svg>";
}

std::string svg_histogram(const std::vector<double>& values, int bins, const std::string& unit, double unit_divisor,
                          const std::string& aria_label, int width) {
  const int height = 200, top = 10, axis = 170, left = 40;
  bins = std::max(bins, 1);
  double max = 0;
  for (double v : values) max = std::max(max, v);
  std::vector<int> counts(static_cast<std::size_t>(bins), 0);
  for (double v : values) {
    int b = max > 0 ? static_cast<int>(v / max * bins) : 0;
    counts[static_cast<std::size_t>(std::clamp(b, 0, bins - 1))]++;
  }
  const int peak = std::max(1, *std::max_element(counts.begin(), counts.end()));
  const double bw = static_cast<double>(width - left - 30) / bins;
  std::string body = svg_text(0, top + 10, std::to_string(peak)) + svg_text(0, axis, "0");
  for (int i = 0; i < bins; ++i) {
    const double from = max * i / bins / unit_divisor, to = max * (i + 1) / bins / unit_divisor;
    const double h = static_cast<double>(axis - top) * counts[static_cast<std::size_t>(i)] / peak;
    body += svg_rect(left + i * bw + 1, axis - h, bw - 2, h, 0,
                     svg_fmt(std::round(from * 10) / 10) + "-" + svg_fmt(std::round(to * 10) / 10) + " " + unit + ": " +
                         std::to_string(counts[static_cast<std::size_t>(i)]) + " task(s)");
  }
  body += "<line class=\"axis\" x1=\"" + std::to_string(left) + "\" y1=\"" + std::to_string(axis) + "\" x2=\"" +
          std::to_string(width - 30) + "\" y2=\"" + std::to_string(axis) + "\"/>";
  for (int i = 0; i <= bins; i += std::max(1, bins / 5)) {
    body += svg_text(left + i * bw, axis + 16, svg_fmt(std::round(max * i / bins / unit_divisor * 10) / 10) + " " + unit,
                     i == 0 ? "start" : "middle");
  }
  return svg_open(width, height, aria_label) + body + "</svg>";
}

std::string svg_stacked_columns(const std::vector<std::string>& series, const std::vector<SvgColumn>& columns,
                                const std::string& unit, const std::string& aria_label, int width) {
  const int top = 10, axis = 180, left = 40;
  double peak = 0;
  std::vector<double> totals(series.size(), 0);
  for (const auto& c : columns) {
    double sum = 0;
    for (std::size_t s = 0; s < c.values.size() && s < series.size(); ++s) {
      sum += std::max(c.values[s], 0.0);
      totals[s] += std::max(c.values[s], 0.0);
    }
    peak = std::max(peak, sum);
  }
  if (peak <= 0) peak = 1;
  const double cw = columns.empty() ? 0 : static_cast<double>(width - left) / static_cast<double>(columns.size());
  std::string body = svg_text(0, top + 10, svg_fmt(std::round(peak)) + " " + unit) + svg_text(0, axis, "0");
  for (std::size_t i = 0; i < columns.size(); ++i) {
    double y = axis;
    for (std::size_t s = 0; s < columns[i].values.size() && s < series.size(); ++s) {
      const double v = std::max(columns[i].values[s], 0.0);
      if (v <= 0) continue;
      const double h = (axis - top) * v / peak;
      y -= h;
      body += svg_rect(left + static_cast<double>(i) * cw, y, std::max(cw - (cw > 3 ? 1 : 0), 0.5), h,
                       static_cast<int>(s), columns[i].label + ": " + series[s] + " " + svg_fmt(v) + " " + unit);
    }
  }
  body += "<line class=\"axis\" x1=\"" + std::to_string(left) + "\" y1=\"" + std::to_string(axis) + "\" x2=\"" +
          std::to_string(width) + "\" y2=\"" + std::to_string(axis) + "\"/>";
  std::vector<SvgPart> legend;
  for (std::size_t s = 0; s < series.size(); ++s) {
    legend.push_back({series[s] + " " + unit, std::round(totals[s]), static_cast<int>(s)});
  }
  double bottom = 0;
  body += svg_legend(legend, axis + 24, width, &bottom);
  return svg_open(width, static_cast<int>(bottom) + 4, aria_label) + body + "</svg>";
}

std::string svg_bars(const std::vector<SvgPart>& items, const std::string& unit, const std::string& aria_label,
                     int width) {
  const int row = 16, label_w = 220;
  double peak = 0;
  for (const auto& it : items) peak = std::max(peak, it.value);
  if (peak <= 0) peak = 1;
  std::string body;
  double y = 0;
  for (const auto& it : items) {
    const double w = (width - label_w - 90) * std::max(it.value, 0.0) / peak;
    bool cut = false;
    std::string label = truncate_utf8(it.label, 30, cut);
    if (cut) label += "…";
    body += svg_text(label_w - 6, y + 12, label, "end");
    body += svg_rect(label_w, y + 2, w, row - 4, it.color, it.label + ": " + svg_fmt(it.value) + " " + unit);
    body += svg_text(label_w + w + 4, y + 12, svg_fmt(std::round(it.value * 10) / 10) + " " + unit);
    y += row;
  }
  if (items.empty()) {
    body += svg_text(0, 14, "(no task has these figures)");
    y = row;
  }
  return svg_open(width, static_cast<int>(y) + 4, aria_label) + body + "</svg>";
}

}  // namespace lazyagent
