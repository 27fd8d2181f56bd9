// `lazyagent-oci task show ID` and `lazyagent-oci task logs ID`: the planner
// task records kept in the run store (planner_run.h).
#include <iostream>
#include <map>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

int cmd_task(const std::vector<std::string>& args) {
  std::string action, id;
  bool json_out = false;
  ArgParser p("task", "show ID [--json] | logs ID",
              "Shows a planner task (status, timings, model, token usage, container, patch summary,\n"
              "error) or prints its log. The ID is the result's planner_task_id.");
  p.positional("ACTION", &action, true, "show or logs", {"show", "logs"});
  p.positional("ID", &id, true, "the planner task id (t-...)");
  p.flag("--json", &json_out, "print the record as JSON (show)");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  if (action == "logs") {
    auto log = store.read_text("tasks", id + ".log");
    if (!log || id.find('/') != std::string::npos) return report_error(usage_error("task logs: no log for task '" + id + "' in " + store.dir() + "/tasks"), false);
    std::cout << escape_for_terminal(*log);
    return 0;
  }
  if (action != "show") return report_error(usage_error("task: unknown action '" + action + "' (show or logs)"), json_out);
  auto rec = store.read_in("tasks", id);
  if (!rec) return report_error(usage_error("task show: no task '" + id + "' in " + store.dir() + "/tasks"), json_out);
  if (json_out) {
    std::cout << rec->dump(2) << std::endl;
    return 0;
  }
  const json& r = *rec;
  const json usage = r.value("usage", json::object());
  std::cout << "task:       " << r.value("task_id", "") << "\n"
            << "run:        " << r.value("run_id", "") << "\n"
            << "status:     " << r.value("status", "") << " (exit " << r.value("exit_code", -1) << ")\n"
            << "model:      " << escape_for_terminal(r.value("model", "")) << "\n"
            << "tokens:     " << usage.value("prompt_tokens", 0L) << " prompt + " << usage.value("completion_tokens", 0L)
            << " completion = " << usage.value("total_tokens", 0L) << "\n"
            << "attempts:   " << r.value("attempts", 0) << "\n"
            << "timings:    " << r.value("ms", 0L) << " ms in all, " << r.value("provider_ms", 0L) << " ms at the provider\n"
            << "container:  " << r.value("container_id", "").substr(0, 12) << " (removed)\n"
            << "patch:      " << r.value("patch_bytes", 0UL) << " bytes, sha256 " << r.value("patch_sha256", "") << "\n";
  if (const json ctx = r.value("context", json()); ctx.is_object()) {
    std::map<std::string, int> why;
    for (const auto& f : ctx.value("included", json::array())) ++why[f.value("why", "")];
    std::string whys;
    for (const auto& [w, n] : why) whys += (whys.empty() ? "" : ", ") + std::to_string(n) + " " + w;
    std::cout << "context:    " << ctx.value("included", json::array()).size() << " file(s) (" << (whys.empty() ? "none" : whys)
              << "), " << ctx.value("used_bytes", 0UL) << " of " << ctx.value("budget_bytes", 0UL) << " bytes, ~"
              << ctx.value("token_estimate", 0UL) << " tokens; cut " << ctx.value("cut", 0UL) << "\n";
    if (const json b = ctx.value("baseline", json()); b.is_object()) {
      std::string failing, named;
      for (const auto& f : b.value("failing", json::array())) failing += (failing.empty() ? "" : ", ") + f.get<std::string>();
      for (const auto& f : b.value("named", json::array())) named += (named.empty() ? "" : ", ") + f.get<std::string>();
      std::cout << "baseline:   " << b.value("failing_total", 0UL) << " test(s) failing before the patch"
                << (failing.empty() ? "" : " (" + escape_for_terminal(failing) + ")") << ", "
                << b.value("output_bytes", 0UL) << " bytes of their output; it names "
                << (named.empty() ? "no seed file" : escape_for_terminal(named)) << "\n";
    }
    if (ctx.value("map_bytes", 0UL) > 0) std::cout << "map:        " << ctx.value("map_bytes", 0UL) << " bytes\n";
    for (const auto& f : ctx.value("cut_sample", json::array())) {
      std::cout << "cut:        " << escape_for_terminal(f.value("path", "")) << " (" << f.value("why", "") << ")\n";
    }
  }
  if (const json loop = r.value("loop", json()); loop.is_object()) {
    std::string used;
    const json tools_used = loop.value("tools_used", json::object());  // items() must not outlive it
    for (const auto& [name, n] : tools_used.items()) {
      used += (used.empty() ? "" : ", ") + escape_for_terminal(name) + " x" + std::to_string(n.get<long>());
    }
    std::cout << "loop:       " << loop.value("turns", 0) << " turn(s) of at most " << loop.value("max_turns", 0)
              << ", stop_reason " << loop.value("stop_reason", "") << "; tools: " << (used.empty() ? "none" : used)
              << "\n";
    if (!loop.value("tools_refused", "").empty()) {
      std::cout << "loop:       the provider refused tools (" << escape_for_terminal(loop.value("tools_refused", ""))
                << "): one-shot prompt\n";
    }
    for (const auto& c : loop.value("tool_calls", json::array())) {
      std::cout << "tool call:  turn " << c.value("turn", 0) << " " << escape_for_terminal(c.value("name", "")) << " "
                << escape_for_terminal(c.value("arguments", "")) << " -> " << c.value("result_bytes", 0UL) << " bytes"
                << (c.value("ok", true) ? "" : " (" + c.value("code", std::string()) + ")") << "\n";
    }
  }
  if (!r.value("error", "").empty()) std::cout << "error:      " << escape_for_terminal(r.value("error", "")) << "\n";
  for (const auto& f : r.value("findings", json::array())) {
    std::cout << "finding:    " << f.value("code", "") << " " << escape_for_terminal(f.value("path", "")) << ": "
              << escape_for_terminal(f.value("message", "")) << "\n";
  }
  return 0;
}

}  // namespace lazyagent
