// What `test` and the MCP server's `test_patch` tool share: the options, as
// the command line declares and checks them, and the request they make. The
// MCP tool turns its JSON arguments into the same flags and goes through the
// same parser and checks (mcp_tools.cpp), so that a tool input is validated
// exactly as the CLI's is.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "pipeline/sandbox_run.h"
#include "pipeline/triage_run.h"

namespace lazyagent {

struct TestOptions {
  ProjectOptions project;
  std::string patch;
  long timeout = 0;
  std::string runtime;
  bool accept_weaker = false;
  long rerun = -1;
  bool no_baseline = false;
  std::string report;
  std::string sign_key;  // --sign-key FILE ("" = the config's signing.key)
  BackendOptions backend;
};

// The parser of `test` with its options declared (not --json, --events).
ArgParser test_command_parser(TestOptions* opt);

struct PreparedTest {
  ProofRequest req;
  JudgeOptions judge;
  EngineFactory factory;
};

// The config with the flags applied, the runtime checked, the seed checked,
// the environment built, then the patch read (`read_patch`: the file, or the
// tool's argument) and the engine resolved: every refusal before anything runs.
Result<PreparedTest> prepare_test(const TestOptions& opt, const RunStore& store,
                                  const std::function<Result<std::string>()>& read_patch);

// A patch text given inline (not from a file): the same bound read_patch_file
// applies, with its message.
Result<std::string> check_patch_text_size(std::string text);

}  // namespace lazyagent
