// `--events jsonl` (cli/event_stream.h, docs/events.md): a consumer that
// parses every line of the stream and checks what came in which order, for
// a real `run` (the scripted provider, the real planner and sandbox) and a
// real `test` with the stream on another descriptor.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;

namespace {

const std::string kEventsKey = "sk-lazyagent-events-key-0123456789";

// Every line parsed (a line that is not a JSON object fails the test), the
// envelope checked: schema 1, seq 1, 2, 3, ..., t_ms never going back.
std::vector<json> parse_stream(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  long last_t = 0;
  while (std::getline(in, line)) {
    INFO("line: " << line);
    json j = json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["schema"] == 1);
    CHECK(j["seq"] == static_cast<long>(out.size()) + 1);
    CHECK(j["t_ms"].get<long>() >= last_t);
    last_t = j["t_ms"].get<long>();
    out.push_back(std::move(j));
  }
  return out;
}

// The steps one sandbox run announces, in order.
const std::vector<std::string> kSandboxSteps = {"validate", "snapshot", "engine", "image", "copy",
                                                "create",   "verify",   "run",    "logs",  "remove"};

// For each run id: its step_start/step_end events in order (each end right
// after its start, ok), and its output lines (all between `run`'s start and end).
void check_runs(const std::vector<json>& ev, std::map<std::string, std::vector<std::string>>* output) {
  std::map<std::string, std::vector<std::string>> steps;
  std::map<std::string, std::string> open;  // run id -> the step started and not ended
  for (const auto& e : ev) {
    const std::string kind = e["event"];
    if (kind == "step_start") {
      const std::string run = e["run_id"];
      CHECK(open[run].empty());
      open[run] = e["step"];
    } else if (kind == "step_end") {
      const std::string run = e["run_id"];
      CHECK(open[run] == e["step"].get<std::string>());
      CHECK(e["ok"] == true);
      CHECK(e["ms"].get<long>() >= 0);
      if (e["step"] != "plan") steps[run].push_back(e["step"]);
      open[run].clear();
    } else if (kind == "output") {
      const std::string run = e["run_id"];
      CHECK(open[run] == "run");
      const std::string text = e["text"];
      CHECK(text.find("lazyagent-probe") == std::string::npos);  // the probe's block is not test output
      (*output)[run].push_back(text);
    }
  }
  CHECK_FALSE(steps.empty());
  for (const auto& [run, list] : steps) {
    INFO("run " << run);
    std::vector<std::string> want;
    for (const auto& s : kSandboxSteps) {
      if (std::find(list.begin(), list.end(), s) != list.end()) want.push_back(s);
    }
    CHECK(list == want);  // in the pipeline's order ("engine" only where the run checks the engine itself)
    CHECK(list.back() == "remove");
  }
}

bool has_line(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("events: every line of run --events jsonl parses, in order: plan, baseline, sandbox steps, output, result",
          "[events]") {
  lazyagent::StubScript s;
  s.api_key = kEventsKey;
  lazyagent::StubReply fix;
  fix.content = json::parse(fixing_patch()).dump();
  s.replies = {fix};
  PodmanProvider p(s, kEventsKey, 2);
  CliResult r = p.run({"--events", "jsonl"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const json result = json_out(r);
  const std::vector<json> ev = parse_stream(r.err);  // stderr holds the events and nothing else
  REQUIRE(ev.size() > 10);
  CHECK(ev.front()["event"] == "start");
  CHECK(ev.front()["command"] == "run");
  CHECK(ev.back()["event"] == "result");
  CHECK(ev.back()["exit_code"] == 0);
  CHECK(ev.back()["result"]["run_id"] == result["run_id"]);
  CHECK(ev.back()["result"]["tests_passed"] == true);

  // The planner's step comes before any step of the patched run.
  const std::string run_id = result["run_id"];
  std::size_t plan_end = 0, first_patched = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]["event"] == "step_end" && ev[i]["step"] == "plan") plan_end = i;
    if (first_patched == 0 && ev[i].value("run_id", "") == run_id && ev[i]["event"] == "step_start" &&
        ev[i]["step"] != "plan") {
      first_patched = i;
    }
  }
  CHECK(plan_end > 0);
  CHECK(first_patched > plan_end);

  std::map<std::string, std::vector<std::string>> output;
  check_runs(ev, &output);
  // The patched run's output came as it ran: the runner's report among its lines.
  CHECK(has_line(output[run_id], "Ran 4 tests"));
  CHECK(has_line(output[run_id], "OK"));
  // The baseline (the seed unpatched) ran too, flagged, and failed its tests.
  bool baseline_seen = false;
  for (const auto& e : ev) baseline_seen = baseline_seen || e.value("baseline", false);
  CHECK(baseline_seen);
  // The people's progress lines came as notes, not as text on stderr.
  bool note = false;
  for (const auto& e : ev) note = note || (e["event"] == "note" && e["text"] == "plan");
  CHECK(note);
}

TEST_CASE("events: test --events-fd 3 streams to that descriptor and leaves stderr to people", "[events][quick]") {
  TempDir state, dir;
  const std::string patch = dir.file("patch.json", fixing_patch());
  const std::string events = dir.path() + "/events.jsonl";
  const std::string cmd = "cd / && XDG_STATE_HOME=" + state.path() + " LAZYAGENT_CONFIG=" + LAZYAGENT_SOURCE_DIR +
                          "/config/lazyagent.yaml " + LAZYAGENT_BINARY + " test --seed " + seed_dir() + " --patch " +
                          patch + " --no-baseline --json --events-fd 3 3>" + events + " >" + dir.path() + "/out.json 2>" +
                          dir.path() + "/stderr; echo rc=$?";
  const std::string rc = sh(cmd);
  INFO(rc << read_file(dir.path() + "/stderr"));
  CHECK(rc == "rc=0\n");
  CHECK(read_file(dir.path() + "/stderr").find("==> validate") != std::string::npos);
  const std::vector<json> ev = parse_stream(read_file(events));
  REQUIRE(ev.size() > 5);
  CHECK(ev.front()["command"] == "test");
  CHECK(ev.back()["event"] == "result");
  std::map<std::string, std::vector<std::string>> output;
  check_runs(ev, &output);
  const std::string run_id = ev.back()["result"]["run_id"];
  CHECK(has_line(output[run_id], "Ran 4 tests"));
}

TEST_CASE("events: a bad --events or --events-fd is a usage error naming it", "[events][quick]") {
  TempDir state;
  CliResult bad = run_cli({state.path()}, {"test", "--patch", "x.json", "--events", "xml"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "lazyagent-oci: test: --events: expected jsonl, got 'xml'\n");
  CliResult closed = run_cli({state.path()}, {"run", "--events-fd", "57"});
  CHECK(closed.exit_code == 2);
  CHECK(closed.err == "lazyagent-oci: run: --events-fd: descriptor 57 is not open for writing\n");
  CliResult out = run_cli({state.path()}, {"eval", "t.jsonl", "--events-fd", "1"});
  CHECK(out.exit_code == 2);
  CHECK(out.err.find("--events-fd: 1 is stdin or stdout") != std::string::npos);
  // An error after the stream opened is its last event, and the only text on stderr.
  CliResult missing = run_cli({state.path()}, {"test", "--seed", "/nonexistent-seed", "--patch", "x.json",
                                               "--events", "jsonl"});
  CHECK(missing.exit_code == 2);
  const std::vector<json> ev = parse_stream(missing.err);
  REQUIRE(ev.size() == 2);
  CHECK(ev[1]["event"] == "error");
  CHECK(ev[1]["error_kind"] == "usage");
  CHECK(ev[1]["exit_code"] == 2);
}

TEST_CASE("events: eval --events jsonl names each run's task, then task_end, then the summary with resource totals",
          "[events][quick]") {
  TempDir state, dir;
  const std::string tasks =
      dir.file("tasks.jsonl", json{{"id", "fix-1"}, {"seed", seed_dir()}, {"patch", json::parse(fixing_patch())}}.dump() + "\n");
  CliResult r = run_cli({state.path()}, {"eval", tasks, "--out", dir.path() + "/out", "--no-baseline", "--json",
                                         "--events", "jsonl"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<json> ev = parse_stream(r.err);
  REQUIRE(ev.size() > 5);
  CHECK(ev.front()["command"] == "eval");
  std::size_t started = 0, first_step = 0, ended = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]["event"] == "task_start" && started == 0) started = i;
    if (ev[i]["event"] == "step_start" && first_step == 0) {
      first_step = i;
      CHECK(ev[i]["task"] == "fix-1");
    }
    if (ev[i]["event"] == "task_end") {
      ended = i;
      CHECK(ev[i]["task"] == "fix-1");
      CHECK(ev[i]["category"] == "passed");
    }
  }
  CHECK(started > 0);
  CHECK(first_step > started);
  CHECK(ended > first_step);
  CHECK(ev.back()["event"] == "summary");
  CHECK(ev.back()["exit_code"] == 0);
  CHECK(ev.back()["summary"]["passed"]["count"] == 1);
  CHECK(ev.back()["summary"]["resources"]["measured"] == 1);
  CHECK(ev.back()["summary"]["resources"]["cpu_ms"].get<long>() > 0);
  CHECK(json::parse(r.out)["resources"] == ev.back()["summary"]["resources"]);
}
