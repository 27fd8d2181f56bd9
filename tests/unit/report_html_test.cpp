// The eval report's escaping, counts and policy (src/report/): what code
// under test writes must stay text in the page, and the page's counts must
// be summary.json's.
#include "catch_compat.h"

#include <fstream>
#include <regex>

#include "report/html_text.h"
#include "report/report_assets.h"
#include "report/report_data.h"
#include "report/report_page.h"
#include "report/report_svg.h"
#include "report/report_task_html.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

const std::string kRlo = "\xE2\x80\xAE";  // U+202E RIGHT-TO-LEFT OVERRIDE
const std::string kLri = "\xE2\x81\xA6";  // U+2066 LEFT-TO-RIGHT ISOLATE

std::size_t occurrences(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// A result file as eval writes it (eval_runner.h), reduced to what the report reads.
json result(const std::string& id, const std::string& category, int line) {
  return {{"task_id", id},
          {"run_id", "r-" + id},
          {"status", category == "refused" ? "refused" : "completed"},
          {"tests_passed", category == "passed"},
          {"test_output", "Ran 4 tests\nOK\n"},
          {"timings", {{"create", 40}, {"start", 20}, {"wait", 300}}},
          {"resources", {{"available", true}, {"cpu_ms", 120 + line}, {"memory_peak_bytes", 8 << 20}}},
          {"eval", {{"category", category}, {"line", line}, {"ms", 1000 * line}, {"attempts", json::array()}}}};
}

json summary_of(const std::map<std::string, std::vector<std::string>>& groups, std::size_t total) {
  json s = {{"total", total}, {"wall_ms", 5000}, {"jobs", 2}, {"interrupted", false}};
  for (const auto& [k, ids] : groups) s[k] = {{"count", ids.size()}, {"ids", ids}};
  return s;
}

ReportData data_of(const json& summary, const std::vector<json>& results) {
  ReportData d;
  d.out_dir = "/tmp/evals/x.eval";
  d.summary = summary;
  for (const auto& r : results) d.tasks.push_back(report_task_from_result("", r));
  d.categories = report_categories(d.summary, d.tasks);
  return d;
}

std::string count_shown(const std::string& page, const std::string& name) {
  std::smatch m;
  const std::regex re("data-count=\"" + name + "\">([^<]*)<");
  return std::regex_search(page, m, re) ? m[1].str() : "(absent)";
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("report html: markup in hostile text stays text (script, textarea end, onerror attribute)") {
  CHECK(html_text("<script>window.__pwned=1</script>") == "&lt;script&gt;window.__pwned=1&lt;/script&gt;");
  CHECK(html_text("</textarea><b>x</b>") == "&lt;/textarea&gt;&lt;b&gt;x&lt;/b&gt;");
  CHECK(html_text("<img src=x onerror=\"alert(1)\">") == "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
  CHECK(html_text("a' b & c") == "a&#39; b &amp; c");
  CHECK(html_attr("\" onmouseover='x'") == "&quot; onmouseover=&#39;x&#39;");
  // Text around stays as it is, UTF-8 included.
  CHECK(html_text("déjà vu\tok\n") == "déjà vu\tok\n");
}

TEST_CASE("report html: bidi overrides and control characters are shown as markers, never passed through") {
  const std::string out = html_text("if admin " + kRlo + "} " + kLri + "x");
  CHECK(out == "if admin <span class=\"cc\">&lt;U+202E&gt;</span>} <span class=\"cc\">&lt;U+2066&gt;</span>x");
  CHECK(out.find(kRlo) == std::string::npos);
  CHECK(html_text(std::string("a\x1b]0;t\x07z", 8)) ==
        "a<span class=\"cc\">&lt;U+001B&gt;</span>]0;t<span class=\"cc\">&lt;U+0007&gt;</span>z");
  CHECK(html_text(std::string("n\0l", 3)) == "n<span class=\"cc\">&lt;U+0000&gt;</span>l");
  CHECK(html_text("FAILED\rOK") == "FAILED<span class=\"cc\">&lt;U+000D&gt;</span>OK");  // a bare CR cannot overwrite
  CHECK(html_text("line\r\nnext") == "line\nnext");                                   // CRLF is a line break
  CHECK(html_text("\x7f") == "<span class=\"cc\">&lt;U+007F&gt;</span>");
  CHECK(html_text("\xC2\x9B") == "<span class=\"cc\">&lt;U+009B&gt;</span>");         // C1 CSI
  CHECK(html_text("zero\xE2\x80\x8Bwidth") == "zero<span class=\"cc\">&lt;U+200B&gt;</span>width");
  CHECK(html_text("ls\xE2\x80\xA8x") == "ls<span class=\"cc\">&lt;U+2028&gt;</span>x");  // line separator
  CHECK(html_text("bad\xFF" "byte") == "bad<span class=\"cc\">&lt;0xFF&gt;</span>byte");
  // In an attribute: the marker's spelling, no markup.
  CHECK(html_attr("x" + kRlo + "y\x01") == "x&lt;U+202E&gt;y&lt;U+0001&gt;");
}

TEST_CASE("report html: chart labels are escaped without markup (a span would end the SVG in the parser)") {
  const std::string label = "<script>x</script>" + kRlo + "step";
  for (const std::string& svg : {svg_strip({{label, 3, 1}}, label), svg_bars({{label, 3, 1}}, "ms", "bars"),
                                 svg_stacked_columns({label}, {{label, {5}}}, "ms", "steps")}) {
    CHECK(svg.rfind("<svg ", 0) == 0);
    CHECK(svg.find("<span") == std::string::npos);
    CHECK(svg.find("<script") == std::string::npos);
    CHECK(svg.find(kRlo) == std::string::npos);
    CHECK(svg.find("&lt;script&gt;x&lt;/script&gt;&lt;U+202E&gt;step") != std::string::npos);
  }
  const std::string h = svg_histogram({100, 200, 1900}, 4, "s", 1000.0, "durations");
  CHECK(occurrences(h, "<rect ") == 4);
  CHECK(h.find("<title>0-0.5 s: 2 task(s)</title>") != std::string::npos);
  CHECK(h.find("<title>1.4-1.9 s: 1 task(s)</title>") != std::string::npos);
}

TEST_CASE("report html: a hostile task's test name, output, reason and diff are text in the page") {
  const std::string hostile = "<script>window.__pwned=1</script></textarea><img src=x onerror=\"window.__pwned=2\">" +
                              kRlo + "\x1b[2J";
  json r = result("evil", "failed", 1);
  r["test_output"] = "out: " + hostile;
  r["reason"] = "reason: " + hostile;
  r["tests"] = {{"format", "unittest"}, {"complete", true}, {"tests", {{{"id", "test_" + hostile}, {"outcome", "failed"}}}}};
  r["triage"] = {{"available", true}, {"verdict", "failed"}, {"newly_broken", {"test_" + hostile}}};
  r["suspicious"] = {{{"code", "suspicious_exit"}, {"path", "a" + hostile + ".py"}, {"line", 3}, {"message", hostile}}};
  ReportData d = data_of(summary_of({{"passed", {}}, {"failed", {"evil"}}}, 1), {r});
  d.tasks[0].diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+" + hostile + "\n";
  const std::string page = render_report_html(d, {});
  CHECK(occurrences(page, "<script") == 1);  // the page's own
  CHECK(occurrences(page, "</script>") == 1);
  CHECK(occurrences(page, "<img") == 0);
  CHECK(occurrences(page, "</textarea") == 0);
  CHECK(occurrences(page, "onerror=\"") == 0);
  CHECK(page.find(kRlo) == std::string::npos);
  CHECK(page.find('\x1b') == std::string::npos);
  CHECK(occurrences(page, "&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 5);  // output, reason, test, triage, diff, finding
  CHECK(page.find("<span class=\"add\">+&lt;script&gt;") != std::string::npos);  // the diff line, colored, escaped
  // The triage's test id links to the test's row.
  CHECK(page.find("<a href=\"#task-0-t0\"><code>test_&lt;script&gt;") != std::string::npos);
  CHECK(page.find("<tr id=\"task-0-t0\">") != std::string::npos);
}

TEST_CASE("report html: the counts shown are summary.json's, unknown categories included, suspicious passes first") {
  json sus = result("sus", "passed", 3);
  sus["suspicious"] = {{{"code", "suspicious_atexit"}, {"path", "calculator.py"}, {"line", 9}, {"message", "atexit"}}};
  json ref = result("ref", "refused", 4);
  ref["findings"] = {{{"code", "dot_component"}, {"path", "../x"}, {"message", "a '..' component"}}};
  json infra = {{"task_id", "infra"}, {"error", "image not found"}, {"error_kind", "engine"},
                {"eval", {{"category", "infra_error"}, {"line", 5}, {"ms", 10}}}};
  const json s = summary_of({{"passed", {"ok", "sus"}},
                             {"failed", {"bad"}},
                             {"refused", {"ref"}},
                             {"infra_error", {"infra"}},
                             {"flaky", {}},
                             {"isolation_violation", {"iso"}},
                             {"brand_new", {"new"}},
                             {"suspicious", {"sus"}},
                             {"suspicious_passed", {"sus"}},
                             {"skipped", {}}},
                            8);
  ReportData d = data_of(s, {result("ok", "passed", 1), result("bad", "failed", 2), sus, ref, infra,
                             result("iso", "isolation_violation", 6), result("new", "brand_new", 7)});
  CHECK(d.categories == std::vector<std::string>{"passed", "failed", "flaky", "refused", "infra_error",
                                                 "isolation_violation", "brand_new"});
  const std::string page = render_report_html(d, {});
  CHECK(count_shown(page, "total") == "8");
  CHECK(count_shown(page, "passed") == "2");
  CHECK(count_shown(page, "failed") == "1");
  CHECK(count_shown(page, "flaky") == "0");
  CHECK(count_shown(page, "refused") == "1");
  CHECK(count_shown(page, "infra_error") == "1");
  CHECK(count_shown(page, "isolation_violation") == "1");
  CHECK(count_shown(page, "brand_new") == "1");
  CHECK(count_shown(page, "suspicious_passed") == "1");
  CHECK(count_shown(page, "resolved_rate") == "25.0%");
  // Refusals by reason code, infra errors by kind.
  CHECK(page.find("<tr><td><code>dot_component</code></td><td class=\"num\">1</td>") != std::string::npos);
  CHECK(d.tasks[4].reason_codes == std::vector<std::string>{"engine"});
  // The task list: the suspicious pass first, then isolation, infra, failed, refused, the unknown, the pass.
  std::vector<std::string> order;
  const std::regex re("<details class=\"task\"[^>]* data-id=\"([^\"]*)\">");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), re); it != std::sregex_iterator(); ++it) {
    order.push_back((*it)[1].str());
  }
  CHECK(order == std::vector<std::string>{"sus", "iso", "infra", "bad", "ref", "new", "ok"});
  // verify, diff and apply commands name the run.
  CHECK(page.find("lazyagent-oci verify r-ok") != std::string::npos);
}

TEST_CASE("report html: the Content-Security-Policy allows exactly the page's own style and script") {
  const std::string page = render_report_html(data_of(summary_of({{"passed", {}}}, 0), {}), {});
  const std::string csp = report_csp();
  CHECK(csp.rfind("default-src 'none'; script-src 'sha256-", 0) == 0);
  CHECK(csp.find("unsafe") == std::string::npos);
  CHECK(page.find("<meta http-equiv=\"Content-Security-Policy\" content=\"" + csp + "\">") < page.find("<style>"));
  const auto s0 = page.find("<script>") + 8, s1 = page.find("</script>");
  CHECK(csp_hash_source(page.substr(s0, s1 - s0)) == csp_hash_source(report_script()));
  CHECK(csp.find(csp_hash_source(report_script())) != std::string::npos);
  CHECK(csp.find(csp_hash_source(report_css())) != std::string::npos);
  // The known digest of "alert(1)" (as browsers compute it for a CSP hash).
  CHECK(csp_hash_source("alert(1)") == "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='");
  // No external resource of any kind.
  for (const char* ext : {"src=", "href=\"http", "url(", "@import"}) CHECK(page.find(ext) == std::string::npos);
}

TEST_CASE("report html: the loader reads summary.json and the results, leaves out stale ones, names the not run") {
  Tmp dir;
  std::filesystem::create_directories(dir.path + "/results");
  write(dir.path + "/summary.json",
        summary_of({{"passed", {"a"}}, {"failed", {"b"}}, {"not_run", {"c"}}}, 3).dump());
  write(dir.path + "/results/a.json", result("a", "passed", 1).dump());
  write(dir.path + "/results/b.json", result("b", "failed", 2).dump());
  write(dir.path + "/results/old.json", result("old", "failed", 9).dump());  // an earlier task file's
  write(dir.path + "/results/torn.json", "{\"task_id\":");
  auto d = load_report_data(dir.path, [](const std::string& run) -> Result<std::string> {
    return std::string("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-" + run + "\n");
  });
  REQUIRE(d);
  REQUIRE(d->tasks.size() == 3);
  CHECK(d->tasks[0].id == "a");
  CHECK(d->tasks[1].id == "b");
  CHECK(d->tasks[2].id == "c");
  CHECK(d->tasks[2].category == "not_run");
  CHECK(d->tasks[0].diff_note == "no proven change");  // no diff_sha256 in its result
  CHECK(d->problems == std::vector<std::string>{"unreadable result file: results/torn.json",
                                                "1 result file(s) of tasks summary.json does not count (an earlier "
                                                "task file's): left out"});
  auto missing = load_report_data(dir.path + "/nowhere", nullptr);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "report: no summary.json in " + dir.path +
                                       "/nowhere (give the --out directory of an eval that has finished or been "
                                       "interrupted)");
}

TEST_CASE("report html: each task shows its signature state and key id, the path as text", "[quick]") {
  json signed_r = result("signed", "passed", 0);
  signed_r["attestation"] = {{"path", "/s/artifacts/<b>r-1.intoto.jsonl"}, {"keyid", std::string(64, 'a')}, {"sha256", "x"}};
  const json plain = result("plain", "failed", 1);
  ReportData d = data_of(summary_of({{"passed", std::vector<std::string>{"signed"}}, {"failed", std::vector<std::string>{"plain"}}}, 2), {signed_r, plain});
  const std::string page = render_report_html(d, {});
  CHECK(page.find("<dt>signature</dt><dd>signed, key <code>" + std::string(16, 'a') +
                  "</code> (<code>/s/artifacts/&lt;b&gt;r-1.intoto.jsonl</code>)</dd>") != std::string::npos);
  CHECK(page.find("<dt>signature</dt><dd>not signed</dd>") != std::string::npos);
}
