// What is generated from the commands' own parsers (command_shapes.h): the
// shell completion scripts for bash, zsh and fish, and the manual page. Pure:
// shapes in, text out.
//
// What is completed: the commands, session's subcommands, each command's
// options; an option's or argument's value by what it is (value_kind):
// the words it may be, a directory, a file, or the ids of runs, sessions and
// planner tasks, which the script asks of the program being completed at
// completion time (`lazyagent-oci completion --ids runs|sessions|tasks`,
// read from the run store: no podman call).
#pragma once

#include <string>
#include <vector>

#include "cli/command_shapes.h"

namespace lazyagent {

// "w:a,b" (one of these words), "dir", "file", "runs", "sessions", "tasks",
// or "" (nothing to complete: a number, a name, a command).
std::string value_kind(const std::string& command, const std::string& metavar,
                       const std::vector<std::string>& choices);

// The shells completion_script knows, in order.
const std::vector<std::string>& completion_shells();

// The script for `shell` (one of completion_shells()); "" for another.
std::string completion_script(const std::string& shell, const std::vector<CommandShape>& shapes);

// lazyagent-oci(1), from the same shapes: each command's synopsis,
// description, arguments and options as `--help` shows them, so the manual
// cannot drift from the binary either. The build writes it (`lazyagent-oci
// help --man`, CMakeLists.txt) and installs it under share/man/man1.
std::string man_page(const std::vector<CommandShape>& shapes, const std::string& version);

// Text made safe for roff: backslashes escaped, '-' as \-, a line starting
// with '.' or '\'' guarded with \&.
std::string roff_escaped(const std::string& text);


}  // namespace lazyagent
