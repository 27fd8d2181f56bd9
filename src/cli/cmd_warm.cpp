// `lazyagent-oci warm`: make warm spares now; and what `test` and `run` do
// after printing their result with engine.warm (remove the sandbox, refill).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "contract/seed_snapshot.h"
#include "engine/engine.h"
#include "engine/warm_pool.h"
#include "pipeline/sandbox_run.h"

namespace lazyagent {

using nlohmann::json;

pid_t fork_detached(WarmPool& pool) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    (void)pool.finish_removals();
    return pid;
  }
  if (pid > 0) {  // the parent: the child has the sandboxes to remove
    pool.forget_removals();
    return pid;
  }
  // The child: its own session, no terminal, nothing of the caller's pipes
  // (a caller reading our stdout to its end must not wait for it).
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
  }
  return 0;
}

void after_result(const Config& config, long timeout_seconds, const EngineFactory& factory, Engine& engine) {
  WarmPool* pool = engine.warm_pool();
  if (pool == nullptr) return;  // nothing deferred, no spares to make
  if (config.engine.warm <= 0 || !factory) {
    (void)pool->finish_removals();
    return;
  }
  // One refill per run store at a time: the child inherits this lock and
  // holds it until it is done (`flock STATE/refill.lock true` waits for it).
  // When another refill holds it, that one makes the spares, and this
  // process removes its sandboxes itself.
  const std::string lock_path = default_run_store().dir() + "/" + kRefillLockName;
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (lock >= 0) ::close(lock);
    (void)pool->finish_removals();
    return;
  }
  const pid_t pid = fork_detached(*pool);
  if (pid != 0) {  // the parent (or no child: removed already)
    ::close(lock);
    return;
  }
  int code = pool->finish_removals() ? 0 : 1;
  {
    const auto fresh = factory();
    if (!keep_warm(config, timeout_seconds, *fresh, static_cast<int>(config.engine.warm))) code = 1;
  }
  ::_exit(code);
}

int cmd_warm(const std::vector<std::string>& args) {
  ProjectOptions project;
  long count = 0, timeout = 0;
  std::string runtime;
  bool accept_weaker = false, as_json = false;
  BackendOptions backend;
  ArgParser p("warm", "[--seed DIR] [--allow PATH]... [--test-command CMD] [--count N] [--timeout S] [--config FILE]\n"
              "            [--runtime runc|crun|runsc] [--accept-weaker-policy] [--json]",
              "Makes warm spares for the seed's sandboxes now: containers created with the policy,\n"
              "initialised and verified, whose private copy is filled by the next `test`, `run` or\n"
              "`eval` of the same seed (by its real path), config and image, whatever engine.warm\n"
              "says (it skips create and init). Spares are\n"
              "labelled io.lazyagent.role=spare, listed by `sandboxes`, removed by `reap`, expire\n"
              "after engine.warm_ttl_seconds, and are removed, never used, once the policy, the\n"
              "image or the config changes. With engine.warm: N, `test` and `run` keep N spares\n"
              "themselves, made after they print their result. Podman only.");
  add_project_options(p, &project);
  p.integer("--count", &count, "N", "spares to keep (default: the config's engine.warm, at least 1)", 1, 8);
  p.integer("--timeout", &timeout, "S", "the test deadline the spares are for (default: timeouts.test_seconds)", 1, 86400);
  p.option("--runtime", &runtime, "RUNTIME", "runc, crun or runsc; default: the config's engine.runtime, else the service's runc or crun");
  p.choices("--runtime", {"runc", "crun", "runsc"});
  p.flag("--accept-weaker-policy", &accept_weaker, "as for `test`");
  p.flag("--json", &as_json, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;

  auto config = project_config(project, "warm");
  if (!config) return report_error(config.error(), as_json);
  if (auto st = apply_runtime_options(runtime, accept_weaker, &*config); !st) return report_error(st.error(), as_json);
  if (auto st = check_seed_dir(config->seed); !st) return report_error(st.error().context("warm"), as_json);
  if (auto st = use_environment(&*config, backend); !st) return report_error(st.error(), as_json);
  const RunStore store = default_run_store();
  if (auto st = store.ensure(); !st) return report_error(st.error(), as_json);
  auto factory = engine_factory(backend, *config, store);
  if (!factory) return report_error(factory.error(), as_json);
  const auto engine = (*factory)();
  if (engine->warm_pool() == nullptr) {
    return report_error(usage_error(std::string("warm: the ") + engine->name() + " engine keeps no warm spares"), as_json);
  }
  if (auto st = engine->check([](const std::string& s) { progress_line(s); }); !st) return report_error(st.error(), as_json);
  const int n = static_cast<int>(count ? count : std::max<std::int64_t>(config->engine.warm, 1));
  if (!as_json) progress_line("making warm spares (" + std::to_string(n) + ")");
  auto made = keep_warm(*config, timeout ? timeout : config->timeouts.test_seconds, *engine, n);
  if (!made) return report_error(made.error(), as_json);
  if (as_json) {
    std::cout << json{{"made", *made}, {"count", n}, {"ttl_seconds", config->engine.warm_ttl_seconds}}.dump(2) << std::endl;
  } else {
    for (const auto& m : *made) std::cout << "made " << m << "\n";
    std::cout << n << " warm spare(s) ready, for " << config->engine.warm_ttl_seconds << " s\n";
  }
  return 0;
}

}  // namespace lazyagent
