// The eval report (src/report/) end to end: a real eval (real podman, the
// demo seed) of a pass, a fail, a refused patch, a suspicious pass, an
// infrastructure error and a hostile patch, written with `eval --report
// html:PATH` and `report html`, then opened in headless Chromium (Debian's
// `chromium`, installed by scripts/setup.sh for the test suite) through
// tests/integration/report_browser.py: it renders (a screenshot under the
// build's test-output/report/), asks for nothing on the network, logs no
// console error, shows summary.json's counts, and the hostile task's script
// does not run while its text is shown. A positive control first proves the
// browser driver sees a request, a console error and a marker when a page
// does have them. Then a 500-task report's size and open time, against the
// same bytes as plain text.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "harness.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

// What code under test can write: markup, an attribute handler, the end of a
// <textarea>, a bidi override (written by the patch as an escape, so the
// patch itself passes the hidden-text contract).
const char* kHostileMarkup = "<script>window.__pwned=1</script></textarea><img src=x onerror=\"window.__pwned=2\">";

// calculator.py fixed, plus code that prints hostile text and gives every
// test class one more test whose name is hostile (the runner then reports it).
std::string hostile_patch() {
  return attack_patch(std::string("import unittest as _u\n"
                                  "_H = '") + kHostileMarkup + "' + '\\u202e' + 'evil'\n"
                                  "print('OUT ' + _H, flush=True)\n"
                                  "_orig = _u.TestLoader.getTestCaseNames\n"
                                  "def _names(self, cls):\n"
                                  "    if not hasattr(cls, 'test_' + _H):\n"
                                  "        setattr(cls, 'test_' + _H, lambda self: None)\n"
                                  "    return _orig(self, cls)\n"
                                  "_u.TestLoader.getTestCaseNames = _names\n");
}

std::string task_line(const std::string& id, const std::string& patch, const std::string& extra = "") {
  json t = {{"id", id}, {"seed", seed_dir()}, {"patch", json::parse(patch)}};
  if (!extra.empty()) t["image"] = extra;
  return t.dump() + "\n";
}

std::string artifacts_dir() {
  const fs::path dir = fs::path(LAZYAGENT_BINARY).parent_path() / "test-output" / "report";
  fs::create_directories(dir);
  return dir.string();
}

// report_browser.py's JSON about a page (required).
json open_in_browser(const std::string& page, const std::vector<std::string>& extra) {
  std::string cmd = "python3 " + std::string(LAZYAGENT_SOURCE_DIR) + "/tests/integration/report_browser.py '" + page + "'";
  for (const auto& e : extra) cmd += " '" + e + "'";
  const std::string out = sh("timeout 180 " + cmd + " 2>&1");
  INFO(cmd << "\n" << out);
  const json j = json::parse(out, nullptr, false);
  REQUIRE(j.is_object());
  return j;
}

}  // namespace

TEST_CASE("report: the browser driver sees a page's requests, console errors and script (positive control)", "[report]") {
  TempDir dir;
  // No policy: its script runs and sets the marker. With default-src 'none':
  // the image is asked for (and blocked), the blocked script is a console error.
  const json open = open_in_browser(dir.file("open.html", "<!DOCTYPE html><p data-count=\"x\">3</p><script>window.__pwned=1</script>"), {});
  CHECK(open["marker"] == "1");
  CHECK(open["counts"]["x"] == "3");
  const json shut = open_in_browser(
      dir.file("shut.html", "<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
                            "<img src=\"http://127.0.0.1:9/x.png\"><script>window.__pwned=1</script>"),
      {});
  CHECK(shut["marker"] == nullptr);
  CHECK(shut["requests"] == json::array({"http://127.0.0.1:9/x.png"}));
  REQUIRE(shut["console_errors"].size() == 2);
  CHECK(shut["console_errors"][1].get<std::string>().find("Executing inline script violates") != std::string::npos);
}

TEST_CASE("report: a real eval's HTML report renders offline, shows summary.json's counts, runs no hostile script",
          "[report][eval]") {
  TempDir state, dir;
  const std::string traversal = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/examples/patches/traversal.json");
  const std::string tasks = dir.file(
      "tasks.jsonl", task_line("pass", fixing_patch()) + task_line("fail", wrong_patch()) +
                         task_line("refused", traversal) +
                         task_line("suspicious-pass", attack_patch("import atexit\natexit.register(lambda: None)\n")) +
                         task_line("infra", fixing_patch(), "localhost/lazyagent-no-such-image:report-it") +
                         task_line("hostile", hostile_patch()));
  const std::string out = dir.path() + "/out";
  const std::string page = dir.path() + "/report.html";
  CliResult eval = run_cli({state.path()}, {"eval", tasks, "--jobs", "2", "--out", out, "--json", "--report", "html:" + page}, 600);
  INFO(eval.err);
  CHECK(eval.exit_code == 5);  // the infrastructure error
  const json summary = json::parse(read_file(out + "/summary.json"));
  CHECK(summary["passed"]["ids"] == json::array({"pass", "suspicious-pass", "hostile"}));
  CHECK(summary["failed"]["ids"] == json::array({"fail"}));
  CHECK(summary["refused"]["ids"] == json::array({"refused"}));
  CHECK(summary["infra_error"]["ids"] == json::array({"infra"}));
  CHECK(summary["suspicious_passed"]["ids"] == json::array({"suspicious-pass"}));
  CHECK(eval.err.find("eval: HTML report: " + page) != std::string::npos);
  const std::string html = read_file(page);
  REQUIRE_FALSE(html.empty());

  // The hostile test ran and was reported: its name and output are in the result.
  const json hostile = json::parse(read_file(out + "/results/hostile.json"));
  CHECK(hostile["test_output"].get<std::string>().find(std::string("OUT ") + kHostileMarkup + "\xE2\x80\xAE" "evil") !=
        std::string::npos);
  bool named = false;
  for (const auto& t : hostile["tests"]["tests"]) named |= t["id"].get<std::string>().find(kHostileMarkup) != std::string::npos;
  CHECK(named);
  // In the page it is text: one script element (the page's own), no image, no raw bidi control.
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("\xE2\x80\xAE") == std::string::npos);

  const std::string shot = artifacts_dir() + "/eval-report.png";
  fs::remove(shot);
  const json b = open_in_browser(page, {"--screenshot", shot, "--filter-category", "passed", "--expect-text",
                                        std::string(kHostileMarkup) + "<U+202E>evil", "--expect-text",
                                        "lazyagent-oci verify "});
  INFO(b.dump(2));
  CHECK(b["ready"] == true);  // the page's own script ran (its hash is in the policy)
  CHECK(b["requests"] == json::array());
  CHECK(b["console_errors"] == json::array());
  CHECK(b["marker"] == nullptr);
  CHECK(b["images"] == 0);
  CHECK(b["scripts"] == 1);
  CHECK(b["text_has"][std::string(kHostileMarkup) + "<U+202E>evil"] == true);
  CHECK(b["text_has"]["lazyagent-oci verify "] == true);
  CHECK(b["tasks"] == 6);
  // The counts shown are summary.json's.
  for (const char* c : {"passed", "failed", "refused", "infra_error", "flaky", "suspicious_passed"}) {
    CHECK(b["counts"][c] == std::to_string(summary[c]["count"].get<long>()));
  }
  CHECK(b["counts"]["total"] == std::to_string(summary["total"].get<long>()));
  CHECK(b["counts"]["resolved_rate"] == "50.0%");
  // The category filter works in the page, with no server.
  CHECK(b["filtered"] == 3);
  CHECK(b["shown_text"] == "3 of 6 task(s) shown");
  CHECK(fs::file_size(shot) > 10000);
  fs::copy_file(page, artifacts_dir() + "/eval-report.html", fs::copy_options::overwrite_existing);

  // `report html` on the same out directory writes the same page (but its date);
  // a resumed eval's --report covers the skipped tasks too.
  const std::string again = dir.path() + "/again.html";
  CliResult rep = run_cli({state.path()}, {"report", "html", out, again, "--json"});
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  const json rj = json::parse(rep.out);
  CHECK(rj["tasks"] == 6);
  CHECK(rj["diffs"] == 4);  // the runs that proved a change: pass, fail, suspicious-pass, hostile
  CHECK(rj["bytes"] == read_file(again).size());
  CliResult resumed = run_cli({state.path()}, {"eval", tasks, "--jobs", "2", "--out", out, "--json", "--report", "html:" + page}, 600);
  CHECK(resumed.exit_code == 5);
  CHECK(json::parse(resumed.out)["skipped"]["count"] == 5);
  const std::string resumed_html = read_file(page);
  for (const char* id : {"pass", "fail", "refused", "suspicious-pass", "infra", "hostile"}) {
    CHECK(resumed_html.find("data-id=\"" + std::string(id) + "\"") != std::string::npos);
  }
  CliResult missing = run_cli({state.path()}, {"report", "html", dir.path() + "/nowhere", again});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("report: no summary.json in " + dir.path() + "/nowhere") != std::string::npos);
}

TEST_CASE("report: a 500-task report stays small and opens in headless Chromium faster than its own bytes as plain text", "[report]") {
  TempDir state, dir;
  // One real run gives every synthetic task a real diff from the run store.
  const TestRun run = test_patch({state.path()}, fixing_patch());
  REQUIRE(run.cli.exit_code == 0);
  const std::string out = dir.path() + "/out";
  fs::create_directories(out + "/results");
  const char* cats[] = {"passed", "passed", "passed", "failed", "failed", "refused", "flaky", "infra_error", "passed", "isolation_violation"};
  std::map<std::string, std::vector<std::string>> groups;
  std::string output;
  for (int i = 0; i < 60; ++i) output += "test_case_" + std::to_string(i) + " (test_module.Case) ... ok\n";
  for (int i = 0; i < 500; ++i) {
    const std::string id = "task-" + std::to_string(i);
    const std::string cat = cats[i % 10];
    groups[cat].push_back(id);
    json r = run.result;
    r["task_id"] = id;
    r["test_output"] = output + kHostileMarkup + "\n";
    r["eval"] = {{"category", cat}, {"line", i + 1}, {"ms", 400 + (i * 37) % 3000}, {"attempts", json::array()}};
    if (cat == "refused") r["findings"] = {{{"code", i % 20 == 5 ? "dot_component" : "not_allowed"}, {"path", "x"}, {"message", "m"}}};
    if (i % 50 == 0) r["suspicious"] = {{{"code", "suspicious_exit"}, {"path", "calculator.py"}, {"line", 3}, {"message", "os._exit"}}};
    std::ofstream(out + "/results/" + id + ".json") << r.dump();
  }
  json s = {{"total", 500}, {"jobs", 4}, {"wall_ms", 180000}, {"interrupted", false}};
  for (const char* c : {"passed", "failed", "refused", "infra_error", "flaky", "isolation_violation"}) {
    s[c] = {{"count", groups[c].size()}, {"ids", groups[c]}};
  }
  std::ofstream(out + "/summary.json") << s.dump();
  const std::string page = dir.path() + "/big.html";
  CliResult rep = run_cli({state.path()}, {"report", "html", out, page, "--json"});
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  const json rj = json::parse(rep.out);
  CHECK(rj["tasks"] == 500);
  CHECK(rj["diffs"] == 500);
  const auto bytes = fs::file_size(page);
  WARN("500-task report: " << bytes << " bytes");
  CHECK(bytes < 5u * 1024 * 1024);
  // The host's load stretches any open time (CI's 2 cores, shared with the
  // cluster's tests, once made it 4.3 s, the browser's CPU time as much), so
  // the page is timed against a baseline opened in turn with it: the same
  // bytes as plain text in one <pre>, what the browser needs just to read
  // and lay out that much (2.1 s idle here, the report 0.9 s).
  std::string plain = "<!DOCTYPE html><meta charset=\"utf-8\"><title>plain</title><pre>";
  for (const char c : read_file(page)) {
    if (c == '<') plain += "&lt;";
    else if (c == '&') plain += "&amp;";
    else plain += c;
  }
  plain += "</pre>";
  const std::string plain_page = dir.file("plain.html", plain);
  json b;
  long best = -1, best_plain = -1;
  for (int i = 0; i < 3; ++i) {
    const json p = open_in_browser(plain_page, {});
    const json o = open_in_browser(page, {"--screenshot", artifacts_dir() + "/eval-report-500.png"});
    WARN("500-task report opens in " << o["load_ms"] << " ms (browser CPU " << o["load_cpu_ms"] << " ms), its bytes as plain text in "
                                     << p["load_ms"] << " ms (CPU " << p["load_cpu_ms"] << " ms)");
    if (best < 0 || o["load_ms"].get<long>() < best) best = o["load_ms"].get<long>();
    if (best_plain < 0 || p["load_ms"].get<long>() < best_plain) best_plain = p["load_ms"].get<long>();
    b = o;
  }
  INFO(b.dump(2));
  INFO("best of three: the report " << best << " ms, plain text " << best_plain << " ms");
  CHECK(best < best_plain);
  CHECK(b["tasks"] == 500);
  CHECK(b["requests"] == json::array());
  CHECK(b["console_errors"] == json::array());
  CHECK(b["marker"] == nullptr);
  CHECK(b["counts"]["passed"] == "200");
  CHECK(b["counts"]["isolation_violation"] == "50");
}
