// What `run` and the MCP server's `run_task` tool share (as test_command.h
// for `test`): the options as the command line declares and checks them,
// and the request they make.
#pragma once

#include <string>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "pipeline/agent_run.h"

namespace lazyagent {

struct RunOptions {
  std::string instruction, runtime;
  ProjectOptions project;
  bool accept_weaker = false;
  long timeout = 0;
  long attempts = 0, max_tokens = -1, rerun = -1;
  bool no_baseline = false;
  std::string report;
  std::string sign_key;
  BackendOptions backend;
};

// The parser of `run` with its options declared (not --json, --events).
ArgParser run_command_parser(RunOptions* opt);

struct PreparedRun {
  RunRequest req;
  EngineFactory factory;
};

// The config with the flags applied, the runtime, seed and environment
// checked, the engine resolved: every refusal before anything runs.
Result<PreparedRun> prepare_run(const RunOptions& opt, const RunStore& store);

}  // namespace lazyagent
