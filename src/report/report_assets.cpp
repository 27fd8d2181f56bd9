#include "report/report_assets.h"

#include "util/base64.h"
#include "util/digest.h"

namespace lazyagent {

const std::string& report_css() {
  static const std::string css = R"CSS(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 16px 48px; color: #1b1f24; background: #fff; }
h1 { font-size: 22px; margin: 18px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
h4 { font-size: 13px; margin: 14px 0 4px; color: #444; }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; padding: 8px; overflow: auto; max-height: 420px; white-space: pre-wrap; word-break: break-all; }
.meta-line { color: #57606a; margin: 0 0 8px; }
.figures { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.figure { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; min-width: 130px; }
.figure .v { font-size: 20px; font-weight: 600; display: block; }
.figure .l { color: #57606a; font-size: 12px; }
.figure.alert { border-color: #cf222e; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num, td.count { text-align: right; font-variant-numeric: tabular-nums; }
.chart { display: block; margin: 6px 0 14px; max-width: 100%; height: auto; }
.chart text { font: 11px sans-serif; fill: #1b1f24; }
.chart .axis { stroke: #8c959f; stroke-width: 1; }
.k0 { fill: #0969da; background: #0969da; } .k1 { fill: #1a7f37; background: #1a7f37; }
.k2 { fill: #cf222e; background: #cf222e; } .k3 { fill: #bf8700; background: #bf8700; }
.k4 { fill: #8250df; background: #8250df; } .k5 { fill: #57606a; background: #57606a; }
.k6 { fill: #82071e; background: #82071e; } .k7 { fill: #afb8c1; background: #afb8c1; }
.k8 { fill: #1b7c83; background: #1b7c83; } .k9 { fill: #bc4c00; background: #bc4c00; }
.k10 { fill: #4d2d00; background: #4d2d00; } .k11 { fill: #0550ae; background: #0550ae; }
.badge { color: #fff; border-radius: 10px; padding: 0 8px; font-size: 12px; }
.susp { color: #fff; background: #cf222e; border-radius: 10px; padding: 0 8px; font-size: 12px; }
.cc { color: #cf222e; background: #ffebe9; border: 1px solid #ff8182; border-radius: 3px; font: 11px ui-monospace, monospace; padding: 0 1px; }
details.task { border: 1px solid #d0d7de; border-radius: 6px; margin: 4px 0; }
details.task > summary { cursor: pointer; padding: 5px 8px; list-style-position: inside; }
details.task[open] > summary { border-bottom: 1px solid #d0d7de; background: #f6f8fa; }
details.task .body { padding: 4px 12px 10px; }
details.task .ms { color: #57606a; }
details.task .reason { color: #57606a; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
dt { color: #57606a; } dd { margin: 0; overflow-wrap: anywhere; }
ul.ids { margin: 0; padding-left: 18px; }
.diff .add { background: #dafbe1; color: #116329; display: block; }
.diff .del { background: #ffebe9; color: #82071e; display: block; }
.diff .hunk { color: #8250df; display: block; }
.diff .meta { color: #57606a; font-weight: 600; display: block; }
.diff .ctx { display: block; }
.o-passed { color: #1a7f37; } .o-other { color: #cf222e; }
#filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; }
#filters label { font-size: 13px; }
.note { color: #57606a; }
.problems { color: #cf222e; }
tr:target, li:target { outline: 2px solid #bf8700; }
)CSS";
  return css;
}

const std::string& report_script() {
  static const std::string js = R"JS(
(function () {
  'use strict';
  var list = document.getElementById('tasks');
  var items = Array.prototype.slice.call(list.querySelectorAll('details.task'));
  var cat = document.getElementById('f-cat'), reason = document.getElementById('f-reason');
  var susp = document.getElementById('f-susp'), minS = document.getElementById('f-min');
  var sort = document.getElementById('f-sort'), shown = document.getElementById('shown');
  function num(el, k) { return Number(el.getAttribute(k)) || 0; }
  var orders = {
    triage: function (a, b) { return num(a, 'data-rank') - num(b, 'data-rank') || num(a, 'data-order') - num(b, 'data-order'); },
    slowest: function (a, b) { return num(b, 'data-ms') - num(a, 'data-ms') || num(a, 'data-order') - num(b, 'data-order'); },
    fastest: function (a, b) { return num(a, 'data-ms') - num(b, 'data-ms') || num(a, 'data-order') - num(b, 'data-order'); },
    file: function (a, b) { return num(a, 'data-order') - num(b, 'data-order'); },
    id: function (a, b) { var x = a.getAttribute('data-id'), y = b.getAttribute('data-id'); return x < y ? -1 : x > y ? 1 : 0; }
  };
  function apply() {
    var c = cat.value, r = reason.value, s = susp.checked, m = (parseFloat(minS.value) || 0) * 1000, n = 0;
    items.forEach(function (el) {
      var ok = (!c || el.getAttribute('data-category') === c) &&
        (!r || el.getAttribute('data-reasons').split('|').indexOf(r) >= 0) &&
        (!s || el.getAttribute('data-suspicious') === '1') && num(el, 'data-ms') >= m;
      el.hidden = !ok;
      if (ok) n++;
    });
    items.slice().sort(orders[sort.value] || orders.triage).forEach(function (el) { list.appendChild(el); });
    shown.textContent = n + ' of ' + items.length + ' task(s) shown';
  }
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    while (el && el !== document.body) {
      if (el.tagName === 'DETAILS') el.open = true;
      el = el.parentElement;
    }
  }
  [cat, reason, susp, minS, sort].forEach(function (el) {
    el.addEventListener('change', apply);
    el.addEventListener('input', apply);
  });
  window.addEventListener('hashchange', openTarget);
  apply();
  openTarget();
  document.documentElement.setAttribute('data-report-ready', '1');
})();
)JS";
  return js;
}

std::string csp_hash_source(const std::string& text) {
  const std::string hex = sha256_hex(text);
  std::string raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return "'sha256-" + base64_encode(raw) + "'";
}

}  // namespace lazyagent
