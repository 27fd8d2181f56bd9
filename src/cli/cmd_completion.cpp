// `lazyagent-oci completion bash|zsh|fish`: the shell's completion script,
// made from the commands' own parsers (command_shapes.h,
// completion_scripts.h); and `completion --ids runs|sessions|tasks`, the ids
// a script offers where an argument takes one, read from the run store's
// file names alone (no record parsed, no podman call: it runs on every Tab).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/completion_scripts.h"
#include "pipeline/session_store.h"

namespace lazyagent {

namespace {

// The newest first, at most `limit`: ids sort by time (run_store.h).
std::vector<std::string> ids_in(const std::string& dir, const std::string& suffix, std::size_t limit) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    ids.push_back(name.substr(0, name.size() - suffix.size()));
  }
  std::sort(ids.rbegin(), ids.rend());
  if (ids.size() > limit) ids.resize(limit);
  return ids;
}

constexpr std::size_t kMostIds = 200;

}  // namespace

int cmd_completion(const std::vector<std::string>& args) {
  std::string shell, ids;
  ArgParser p("completion", "bash|zsh|fish | --ids runs|sessions|tasks",
              "Prints the shell's completion script: commands, session's subcommands, every command's options,\n"
              "and where an argument takes one, the words it may be, files, directories, or the ids of runs,\n"
              "sessions and planner tasks (asked of `lazyagent-oci completion --ids` as you press Tab).\n"
              "scripts/setup.sh and the package install them; by hand:\n"
              "  bash: lazyagent-oci completion bash > /usr/share/bash-completion/completions/lazyagent-oci\n"
              "  zsh:  lazyagent-oci completion zsh > \"${fpath[1]}/_lazyagent-oci\"\n"
              "  fish: lazyagent-oci completion fish > ~/.config/fish/completions/lazyagent-oci.fish");
  p.positional("SHELL", &shell, false, "bash, zsh or fish", completion_shells());
  p.option("--ids", &ids, "KIND", "print the ids of the run store's runs, sessions or tasks, newest first");
  p.choices("--ids", {"runs", "sessions", "tasks"});
  if (auto done = parse_or_exit(p, args)) return *done;
  if (!ids.empty()) {
    const RunStore store = default_run_store();
    std::vector<std::string> out;
    if (ids == "runs") out = ids_in(store.runs_dir(), ".json", kMostIds);
    else if (ids == "tasks") out = ids_in(store.dir() + "/tasks", ".json", kMostIds);
    else if (ids == "sessions") out = SessionStore(store).ids();
    else return report_error(usage_error("completion: --ids " + ids + ": expected runs, sessions or tasks"), false);
    for (const auto& id : out) std::cout << id << "\n";
    return kExitPassed;
  }
  const std::string script = completion_script(shell, command_shapes());
  if (script.empty()) {
    return report_error(usage_error(shell.empty() ? "completion: name a shell: bash, zsh or fish"
                                                  : "completion: unknown shell '" + shell + "' (bash, zsh or fish)"),
                        false);
  }
  std::cout << script;
  return kExitPassed;
}

}  // namespace lazyagent
