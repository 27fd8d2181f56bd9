// The eval report's charts as inline SVG (no library, no script): a stacked
// strip of counts, a histogram, stacked columns, horizontal bars. Pure: each
// takes numbers and labels and returns one <svg> element. Labels are hostile
// text and are escaped here (html_text.h); colors are CSS classes "k0".."k11"
// the page defines (report_page.h), so the SVG carries no style attribute
// (the page's Content-Security-Policy allows none).
#pragma once

#include <string>
#include <vector>

namespace lazyagent {

struct SvgPart {
  std::string label;  // shown in the legend and the tooltip
  double value = 0;
  int color = 0;      // class k<color>
};

// One horizontal bar of `width` split by value; a legend with counts below.
std::string svg_strip(const std::vector<SvgPart>& parts, const std::string& aria_label, int width = 900);

// Histogram of `values` in `bins` equal bins from 0 to the maximum; the x
// axis labelled in `unit` (values are divided by `unit_divisor` for labels).
std::string svg_histogram(const std::vector<double>& values, int bins, const std::string& unit, double unit_divisor,
                          const std::string& aria_label, int width = 900);

// One column per item, stacked by series (series names in `series`, each
// item's values in the same order); a legend of series totals.
struct SvgColumn {
  std::string label;
  std::vector<double> values;
};
std::string svg_stacked_columns(const std::vector<std::string>& series, const std::vector<SvgColumn>& columns,
                                const std::string& unit, const std::string& aria_label, int width = 900);

// Horizontal bars, one per item, largest first as given; value text on each.
std::string svg_bars(const std::vector<SvgPart>& items, const std::string& unit, const std::string& aria_label,
                     int width = 900);

// "1.5 s", "320 ms", "12 MiB": a short human figure.
std::string human_ms(double ms);
std::string human_bytes(double bytes);

}  // namespace lazyagent
