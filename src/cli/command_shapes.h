// Every command's options and arguments, read from the command's own parser
// (cli_args.h ArgShape): the shell completion (completion_scripts.h) and the
// man page are generated from what the commands really accept, so neither
// can drift from `--help`.
//
// How: while command_shapes() runs, parse_or_exit hands each parser it is
// given to record_shape() instead of parsing, and the command returns as if
// --help had been asked for (its output is discarded). Every command declares
// its parser before doing anything, which `--help` already relies on.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/cli_args.h"

namespace lazyagent {

struct CommandShape {
  std::string name;     // "test", or a subcommand's own name ("exec")
  std::string summary;  // the command table's line
  ArgShape args;        // empty options for a command without a parser (version, help)
  std::vector<CommandShape> subcommands;  // session: open, exec, ...
};

// In the order of the command table.
std::vector<CommandShape> command_shapes();

// A command with subcommands of its own (session): their table; else empty.
const std::vector<Command>& subcommands_of(const std::string& command);

// parse_or_exit's hook: true when command_shapes() took this parser's shape
// (the command then stops, as after --help).
bool record_shape(const ArgParser& parser);

}  // namespace lazyagent
