// `lazyagent-oci mcp`: the MCP server (mcp_server.h) and its tools.
//
// Every tool input goes through the CLI's own code: the JSON arguments become
// the flags of `test` (or `run`) and are parsed and checked by the same parser
// and the same preparation (test_command.h), so a tool input is refused
// exactly where, and with the message, the CLI would refuse it. The client
// names no config file: the server's (`mcp --config FILE`) is used for every
// call, and its `mcp.seeds` lists the directories a seed must be in or under.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/mcp_args.h"
#include "cli/mcp_server.h"
#include "cli/run_command.h"
#include "cli/session_command.h"
#include "cli/test_command.h"
#include "engine/engine.h"
#include "pipeline/agent_run.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

struct McpServerSetup {
  std::string config_path;  // "" = the built-in defaults
  Config config;
};

// The run's steps, with its id, as progress for the client.
RunEventFn mcp_step_progress(const ProgressFn& progress) {
  return [progress](const RunEvent& e) {
    if (e.kind != RunEvent::Kind::kStepStart) return;
    progress("run " + e.run_id + (e.baseline ? " (baseline)" : "") + ": " + e.step);
  };
}

ProgressFn mcp_log_only() {
  return [](const std::string& text) { std::fprintf(stderr, "==> %s\n", escape_for_terminal(text).c_str()); };
}

Result<json> mcp_test_patch(const McpServerSetup& s, const json& args, const ProgressFn& progress) {
  std::vector<std::string> argv;
  if (!s.config_path.empty()) argv = {"--config", s.config_path};
  McpArgs a("test_patch", args, {"seed", "patch", "test_command", "allow", "timeout_seconds", "rerun", "baseline"});
  a.string("seed", "--seed", &argv, true);
  a.string("test_command", "--test-command", &argv);
  a.strings("allow", "--allow", &argv);
  a.integer("timeout_seconds", "--timeout", &argv);
  a.integer("rerun", "--rerun", &argv);
  a.boolean("baseline", "--no-baseline", &argv);
  std::string patch;
  if (!args.contains("patch")) {
    a.problem("arguments.patch: required");
  } else if (args["patch"].is_string()) {
    patch = args["patch"];  // a unified diff, or the patch object as JSON text
  } else if (args["patch"].is_object()) {
    patch = args["patch"].dump();
  } else {
    a.problem("arguments.patch: expected a unified diff (a string) or {\"files\":[{\"path\",\"content\"}]}, got " +
              args["patch"].dump());
  }
  if (auto st = a.status(); !st) return st.error();

  TestOptions opt;
  ArgParser p = test_command_parser(&opt);
  if (auto st = p.parse(argv); !st) return st.error().context("test_patch");
  auto seed = check_mcp_seed("test_patch", opt.project.seed, s.config.mcp.seeds);
  if (!seed) return seed.error();
  opt.project.seed = *seed;
  const RunStore store = default_run_store();
  auto prepared = prepare_test(opt, store, [&] { return check_patch_text_size(patch); });
  if (!prepared) return prepared.error().context("test_patch");
  prepared->req.events = mcp_step_progress(progress);
  const auto engine = prepared->factory();
  auto r = prove_judged(prepared->req, prepared->judge, *engine, store, mcp_log_only());
  if (!r) return r.error();
  return result_to_json(*r);
}

Result<json> mcp_run_task(const McpServerSetup& s, const json& args, const ProgressFn& progress) {
  std::vector<std::string> argv;
  if (!s.config_path.empty()) argv = {"--config", s.config_path};
  McpArgs a("run_task", args,
            {"seed", "instruction", "test_command", "allow", "timeout_seconds", "attempts", "max_tokens", "rerun", "baseline"});
  a.string("seed", "--seed", &argv, true);
  a.string("test_command", "--test-command", &argv);
  a.strings("allow", "--allow", &argv);
  a.integer("timeout_seconds", "--timeout", &argv);
  a.integer("attempts", "--attempts", &argv);
  a.integer("max_tokens", "--max-tokens", &argv);
  a.integer("rerun", "--rerun", &argv);
  a.boolean("baseline", "--no-baseline", &argv);
  std::vector<std::string> instruction;
  a.string("instruction", "", &instruction);
  if (!instruction.empty()) {  // the positional INSTRUCTION, never read as a flag ("--config ...")
    argv.push_back("--");
    argv.push_back(instruction[1]);
  }
  if (auto st = a.status(); !st) return st.error();

  RunOptions opt;
  ArgParser p = run_command_parser(&opt);
  if (auto st = p.parse(argv); !st) return st.error().context("run_task");
  auto seed = check_mcp_seed("run_task", opt.project.seed, s.config.mcp.seeds);
  if (!seed) return seed.error();
  opt.project.seed = *seed;
  const RunStore store = default_run_store();
  auto prepared = prepare_run(opt, store);
  if (!prepared) return prepared.error().context("run_task");
  prepared->req.events = mcp_step_progress(progress);
  const auto engine = prepared->factory();
  auto r = run_agent(prepared->req, *engine, store, mcp_log_only());
  if (!r) return r.error();
  return result_to_json(*r);
}

Result<json> mcp_show_record(const char* tool, const char* subdir, const char* key, const json& args) {
  McpArgs a(tool, args, {key});
  std::vector<std::string> id;
  a.string(key, "", &id, true);
  if (auto st = a.status(); !st) return st.error();
  auto rec = default_run_store().read_in(subdir, id[1]);
  if (!rec) return rec.error().context(tool);
  return *rec;
}

Result<json> mcp_list_sandboxes(const json& args) {
  McpArgs a("list_sandboxes", args, {"limit"});
  long limit = 20;
  if (args.contains("limit")) {
    if (!args["limit"].is_number_integer() || args["limit"].get<long long>() < 1 || args["limit"].get<long long>() > 100000) {
      a.problem("arguments.limit: expected an integer between 1 and 100000, got " + args["limit"].dump());
    } else {
      limit = args["limit"].get<long>();
    }
  }
  if (auto st = a.status(); !st) return st.error();
  return sandboxes_json(default_run_store(), static_cast<std::size_t>(limit));
}

json mcp_schema(json properties, std::vector<std::string> required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", required}, {"additionalProperties", false}};
}

const json kMcpSeed = {{"type", "string"}, {"description", "the project directory: one of the server's mcp.seeds or under one"}};
const json kMcpTestCommand = {{"type", "string"}, {"description", "the test command (default: the server config's test_command)"}};
const json kMcpAllow = {{"type", "array"}, {"items", {{"type", "string"}}},
                     {"description", "paths the patch may change (default: the server config's allow)"}};
const json kMcpTimeout = {{"type", "integer"}, {"minimum", 1}, {"maximum", 86400}, {"description", "sandbox deadline in seconds"}};
const json kMcpRerun = {{"type", "integer"}, {"minimum", 0}, {"maximum", 10}, {"description", "re-run a failing verdict up to K times"}};
const json kMcpBaseline = {{"type", "boolean"}, {"description", "also run the seed unpatched for per-test triage (default true)"}};

std::vector<McpTool> mcp_tools(const McpServerSetup& s) {
  std::vector<McpTool> t;
  t.push_back({"test_patch", "Prove a patch",
               "Copies the seed, applies the patch to a private copy, and runs the test command in a sandbox with no "
               "network, no secrets, a read-only root and hard caps; the sandbox is always removed. Returns the result "
               "object of `lazyagent-oci test --json` (tests_passed, test_output, triage, resources, ...). Arguments are "
               "checked as the CLI's flags are (errors name the flag: timeout_seconds is --timeout).",
               mcp_schema({{"seed", kMcpSeed},
                       {"patch", {{"anyOf", json::array({{{"type", "string"}}, {{"type", "object"}}})},
                                  {"description", "a unified diff, or {\"files\":[{\"path\":...,\"content\":...}]}"}}},
                       {"test_command", kMcpTestCommand},
                       {"allow", kMcpAllow},
                       {"timeout_seconds", kMcpTimeout},
                       {"rerun", kMcpRerun},
                       {"baseline", kMcpBaseline}},
                      {"seed", "patch"}),
               [&s](const json& a, const ProgressFn& p) { return mcp_test_patch(s, a, p); }});
  t.push_back({"run_task", "Ask the model for a fix and prove it",
               "The whole `lazyagent-oci run`: the configured model, in a planner container that alone holds the "
               "provider secrets, proposes a patch for the instruction; it is validated and proven in a sandbox as "
               "test_patch does. Returns the result object of `run --json`.",
               mcp_schema({{"seed", kMcpSeed},
                       {"instruction", {{"type", "string"}, {"description", "what to do (default: fix the failing tests)"}}},
                       {"test_command", kMcpTestCommand},
                       {"allow", kMcpAllow},
                       {"timeout_seconds", kMcpTimeout},
                       {"attempts", {{"type", "integer"}, {"minimum", 1}, {"maximum", 20}}},
                       {"max_tokens", {{"type", "integer"}, {"minimum", 0}}},
                       {"rerun", kMcpRerun},
                       {"baseline", kMcpBaseline}},
                      {"seed"}),
               [&s](const json& a, const ProgressFn& p) { return mcp_run_task(s, a, p); }});
  t.push_back({"show_run", "Show a run record", "The run store's record of one run (as `sandboxes` lists them).",
               mcp_schema({{"run_id", {{"type", "string"}}}}, {"run_id"}),
               [](const json& a, const ProgressFn&) { return mcp_show_record("show_run", "runs", "run_id", a); }});
  t.push_back({"show_task", "Show a planner task", "The record of one planner task (`task show --json`).",
               mcp_schema({{"task_id", {{"type", "string"}}}}, {"task_id"}),
               [](const json& a, const ProgressFn&) { return mcp_show_record("show_task", "tasks", "task_id", a); }});
  t.push_back({"list_sandboxes", "List recent sandboxes",
               "The most recent runs and whether podman still has their containers (`sandboxes --json`).",
               mcp_schema({{"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100000}}}}, {}),
               [](const json& a, const ProgressFn&) { return mcp_list_sandboxes(a); }});
  for (auto& tool : mcp_session_tools(s.config_path, s.config)) t.push_back(std::move(tool));
  return t;
}

}  // namespace

int cmd_mcp(const std::vector<std::string>& args) {
  std::string config_path;
  ArgParser p("mcp", "[--config FILE]",
              "Serves the Model Context Protocol on stdin/stdout (JSON-RPC 2.0, revision 2025-06-18) for\n"
              "coding agents: tools test_patch, run_task, show_run, show_task, list_sandboxes and the\n"
              "session_* tools (session_open, session_exec, ...: `lazyagent-oci session`). Every call\n"
              "uses this config; a client may name only seeds in or under the config's mcp.seeds\n"
              "directories. Progress comes as notifications when the client asks; a cancelled call\n"
              "stops and removes its sandbox. Logs go to stderr. Ends at end of input.");
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  if (auto done = parse_or_exit(p, args)) return *done;
  McpServerSetup s;
  s.config_path = chosen_config_path(config_path);
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), false);
  s.config = *config;
  if (s.config.mcp.seeds.empty()) {
    std::fprintf(stderr, "lazyagent-oci mcp: note: the config (%s) lists no mcp.seeds: every seed a client names is refused\n",
                 s.config_path.empty() ? "built-in defaults" : s.config_path.c_str());
  }
  const std::vector<McpTool> tools = mcp_tools(s);
  return serve_mcp(STDIN_FILENO, STDOUT_FILENO, tools, LAZYAGENT_VERSION);
}

}  // namespace lazyagent
