// `lazyagent-oci run [INSTRUCTION]`: the main job.
#include <iostream>

#include "agent_run.h"
#include "cli.h"
#include "cli_args.h"
#include "planner_task.h"
#include "podman_client.h"

namespace lazyagent {

int cmd_run(const std::vector<std::string>& args) {
  if (auto k8s = k8s_backend_args(args)) return cmd_run_k8s(*k8s);  // --backend k8s
  std::string instruction, seed, test_command, config_path;
  std::vector<std::string> allow;
  long timeout = 0;
  bool json = false;
  ArgParser p("run", "[INSTRUCTION] [--seed DIR] [--allow PATH]... [--test-command CMD] [--timeout S] [--config FILE] [--json]",
              "Asks the configured OpenAI-compatible model for a fix, in a planner container that alone\n"
              "holds the provider secrets; validates the patch again; proves it in a sandbox with no\n"
              "network and no secrets, which is always removed. The prompt and the seed's source files\n"
              "go to the provider you configured (`lazyagent-oci configure`).\n"
              "On Kubernetes: `lazyagent-oci run --backend k8s --help`.");
  p.positional("INSTRUCTION", &instruction, false,
               std::string("what to do (default: \"") + kDefaultInstruction + "\")");
  p.option("--seed", &seed, "DIR", "the project (default: the config's seed)");
  p.repeated("--allow", &allow, "PATH", "a path the patch may change (repeat; replaces the config's list)");
  p.option("--test-command", &test_command, "CMD", "the command run in the sandbox");
  p.integer("--timeout", &timeout, "S", "sandbox deadline in seconds (default 120)", 1, 86400);
  p.option("--config", &config_path, "FILE", "config file");
  p.flag("--json", &json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), json);
  RunRequest req;
  req.config = *config;
  req.instruction = instruction;
  if (!seed.empty()) req.config.seed = seed;
  if (!allow.empty()) req.config.allow = allow;
  if (!test_command.empty()) req.config.test_command = test_command;
  req.timeout_seconds = timeout ? timeout : req.config.timeouts.test_seconds;
  if (req.config.seed.empty()) return report_error(usage_error("run: no seed: pass --seed DIR or set `seed` in the config"), json);

  auto socket = podman_socket_from_env();
  if (!socket) return report_error(socket.error(), json);
  PodmanClient podman(*socket);
  return finish_result(run_agent(req, podman, default_run_store(),
                                 [](const std::string& step) { progress_line(step); }),
                       json);
}

}  // namespace lazyagent
