// `lazyagent-oci session open|exec|close|list` (write, read, diff and prove
// are in cmd_session_files.cpp): an agent's working copy in which every
// command runs sandboxed (pipeline/session.h).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/cli_args.h"
#include "cli/session_command.h"
#include "engine/warm_pool.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

Result<Config> session_config(const SessionRecord& rec) {
  ProjectOptions p;
  p.config = rec.config;
  p.seed = rec.seed;
  p.allow = rec.allow;
  p.test_command = rec.test_command;
  auto config = project_config(p, "session");
  if (!config) return config.error();
  if (auto st = use_environment(&*config, BackendOptions{}); !st) return st.error();
  if (rec.accept_weaker_policy) config->engine.accept_weaker_policy = true;
  return config;
}

Result<SessionRecord> open_session_for(const ProjectOptions& project, bool accept_weaker, const RunStore& store,
                                       const ProgressFn& progress) {
  ProjectOptions p = project;
  auto config = project_config(p, "session open");
  if (!config) return config.error();
  std::error_code ec;
  config->seed = std::filesystem::absolute(config->seed, ec).lexically_normal().string();
  if (auto st = check_seed_dir(config->seed); !st) return st.error().context("session open");
  if (accept_weaker) config->engine.accept_weaker_policy = true;
  if (auto st = use_environment(&*config, BackendOptions{}); !st) return st.error();
  auto factory = engine_factory(BackendOptions{}, *config, store);
  if (!factory) return factory.error();
  const auto engine = (*factory)();
  SessionOpen open;
  open.config = *config;
  open.config_path = chosen_config_path(p.config);
  if (!open.config_path.empty()) open.config_path = std::filesystem::absolute(open.config_path, ec).string();
  open.allow = p.allow;
  open.test_command = p.test_command;
  if (auto st = store.ensure(); !st) return st.error();
  return open_session(open, *engine, SessionStore(store), progress);
}

Result<SessionContext> session_context(const std::string& id, const RunStore& store) {
  auto rec = SessionStore(store).load(id);
  if (!rec) return rec.error();
  auto config = session_config(*rec);
  if (!config) return config.error().context("session " + id);
  auto factory = engine_factory(BackendOptions{}, *config, store);
  if (!factory) return factory.error();
  return SessionContext{std::move(*rec), std::move(*config), (*factory)()};
}

SessionLock defer_removal(Engine& engine, const SessionStore& sessions, const SessionRecord& rec) {
  WarmPool* pool = engine.warm_pool();
  if (pool == nullptr || rec.isolation == kIsolationLive) return SessionLock();
  auto lock = sessions.removals_lock(rec.id, false);
  if (!lock) return SessionLock();  // not deferred: removed before the answer
  pool->defer_removals();
  return std::move(*lock);
}

// The deferred removals of one command, in a detached child that holds the
// session's removals lock (shared) until they are done; a thread of this
// process waits for the child, so a long-lived caller (the MCP server) keeps
// no zombie.
pid_t remove_after_answer(Engine& engine, SessionLock removals) {
  WarmPool* pool = engine.warm_pool();
  if (pool == nullptr || !removals.held()) return 0;  // nothing was deferred
  const pid_t pid = fork_detached(*pool);
  if (pid < 0) return 0;  // removed here (fork_detached did)
  if (pid > 0) {  // the parent's lock closes; the child's copy holds it
    std::thread([pid] {
      int status = 0;
      (void)::waitpid(pid, &status, 0);
    }).detach();
    return pid;
  }
  ::_exit(pool->finish_removals() ? 0 : 1);
}

namespace {

std::string age_text(std::int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + " s";
  if (seconds < 7200) return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds / 3600) + " h";
}

int session_open(const std::vector<std::string>& args) {
  ProjectOptions project;
  bool as_json = false;
  bool accept_weaker = false;
  ArgParser p("session open",
              "[--seed DIR] [--allow PATH]... [--test-command CMD] [--config FILE] [--accept-weaker-policy] [--json]",
              "Opens a session: a private working copy of the seed (never your tree) in which `session exec`\n"
              "runs commands under the sandbox policy (no network, no secrets, read-only root, seccomp, no\n"
              "capabilities, limits): in one long-lived sandbox made, verified and probed here, with a\n"
              "persistent shell (sessions.isolation: live, the default), or each in a fresh sandbox\n"
              "(per-command). Prints the session id. The session lives in the run store until `session close`, or until `reap` after\n"
              "its idle TTL or maximum age (config sessions.idle_ttl_seconds, sessions.max_age_seconds).\n"
              "The working copy is a filesystem of its own, capped at sessions.disk_mib and sessions.max_files\n"
              "(a loop-mounted image: needs root; rootless podman's user is refused unless\n"
              "--accept-weaker-policy, and the record then says why it is `uncapped`).");
  add_project_options(p, &project);
  p.flag("--accept-weaker-policy", &accept_weaker,
         "open even if a limit cannot be enforced here (the working copy's cap, a rootless host's cgroup limits)");
  p.flag("--json", &as_json, "print the session's record as one JSON object");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  auto rec = open_session_for(project, accept_weaker, store, [](const std::string& s) { progress_line(s); });
  if (!rec) return report_error(rec.error(), as_json, "no container was left");
  if (as_json) {
    std::cout << session_to_json(*rec).dump(2) << std::endl;
  } else {
    std::cout << rec->id << "\n";
  }
  return kExitPassed;
}

// The command after `--`: its words joined by spaces into one shell line,
// as ssh joins them (`-- 'make && make test'` and `-- make '&&' make test`
// are the same line; quote for the shell inside as you would over ssh).
std::string command_text(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

int session_exec(const std::vector<std::string>& args) {
  std::string id;
  long timeout = 0;
  bool as_json = false;
  ArgParser p("session exec", "ID [--timeout S] [--json] -- CMD...",
              "Runs CMD in the session's working copy (/work). Live sessions (the default): in the session's\n"
              "shell inside its long-lived sandbox, so `cd`, exports and background jobs carry over to the\n"
              "next command; per-command sessions: in a fresh sandbox removed when CMD ends. The words after\n"
              "`--` are joined into one shell line, as ssh joins them. The output (stdout and stderr as they\n"
              "came) is streamed and capped at limits.log_bytes. At the timeout the command's processes are\n"
              "ended (the session lives on). Exit 0: CMD exited 0; 1: CMD failed or timed out (--json and\n"
              "stderr say its exit code); 2: usage, unknown or expired session; 5: engine error.");
  p.positional("ID", &id, true, "the session's id (`session open` printed it)");
  p.integer("--timeout", &timeout, "S", "host-side deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.flag("--json", &as_json, "print {exit_code, output, truncated, timed_out, timings_ms, ...} as one JSON object");
  std::vector<std::string> own = args, words;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      own.assign(args.begin(), args.begin() + static_cast<long>(i));
      words.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
  }
  if (words.empty() && std::find(args.begin(), args.end(), "--") == args.end()) {
    // `session exec ID make test`: the words after the id are the command,
    // meant for after `--` (the options would otherwise be taken as ours).
    std::vector<std::string> loose;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--timeout") ++i;
      else if (args[i].empty() || args[i][0] != '-') loose.push_back(args[i]);
    }
    if (loose.size() > 1) {
      const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
      return report_error(usage_error("session exec: put the command after `--`: lazyagent-oci session exec " + loose[0] +
                                      " -- " + command_text({loose.begin() + 1, loose.end()})),
                          json);
    }
  }
  if (auto done = parse_or_exit(p, own)) return *done;
  if (words.empty()) return report_error(usage_error("session exec: no command: give it after `--`"), as_json);
  const RunStore store = default_run_store();
  auto s = session_context(id, store);
  if (!s) return report_error(s.error(), as_json);
  ExecRequest req;
  req.command = command_text(words);
  req.timeout_seconds = timeout ? timeout : s->config.timeouts.test_seconds;
  req.notes = [](const std::string& line) { progress_line(line); };  // an outage waited out: stderr
  const bool tty = ::isatty(STDOUT_FILENO);
  if (!as_json) {
    bool past_probe = false;
    req.output = [past_probe, tty](const std::string& line) mutable {
      if (!past_probe && line.rfind("lazyagent-probe: ", 0) == 0) return;
      past_probe = true;
      std::cout << (tty ? escape_for_terminal(line) : line) << "\n" << std::flush;
    };
  }
  // Per-command: the command's container is removed after the result is out
  // (its process has exited: nothing of it runs), by a child holding the
  // session's removals lock, for which `close` waits.
  struct RemoveAfter {
    Engine& engine;
    SessionLock removals;
    ~RemoveAfter() { (void)remove_after_answer(engine, std::move(removals)); }
  } remove_after{*s->engine, defer_removal(*s->engine, SessionStore(store), s->record)};
  auto r = exec_in_session(id, s->config, req, *s->engine, SessionStore(store), nullptr);
  if (!r) return report_error(r.error(), as_json, "its container is removed");
  if (as_json) {
    std::cout << exec_result_json(*r).dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  } else if (r->exit_code != 0 || r->timed_out) {
    std::cerr << "lazyagent-oci: the command " << (r->timed_out ? "timed out and was killed" : "exited " + std::to_string(r->exit_code))
              << " (" << r->ms << " ms)\n";
  }
  return r->exit_code == 0 && !r->timed_out ? kExitPassed : kExitFailed;
}

int session_close(const std::vector<std::string>& args) {
  std::string id;
  bool as_json = false;
  ArgParser p("session close", "ID [--json]",
              "Closes the session: waits for a command running in it, removes what a killed command left\n"
              "(its container), then the working copy and the record.");
  p.positional("ID", &id, true, "the session's id");
  p.flag("--json", &as_json, "print {session_id, closed} as one JSON object");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  const SessionStore sessions(store);
  auto rec = sessions.load(id);
  if (!rec) return report_error(rec.error(), as_json);
  auto config = load_config_or_default(rec->config);
  if (!config) return report_error(config.error(), as_json);
  auto factory = engine_factory(BackendOptions{}, *config, store);
  if (!factory) return report_error(factory.error(), as_json);
  if (auto st = close_session(id, *(*factory)(), sessions); !st) return report_error(st.error(), as_json);
  if (as_json) {
    std::cout << json{{"session_id", id}, {"closed", true}}.dump(2) << std::endl;
  } else {
    std::cout << "closed " << id << "\n";
  }
  return kExitPassed;
}

int session_list(const std::vector<std::string>& args) {
  bool as_json = false;
  ArgParser p("session list", "[--json]",
              "Lists the open sessions of the run store: id, seed, commands run, age, and when each expires.");
  p.flag("--json", &as_json, "print the records as one JSON array");
  if (auto done = parse_or_exit(p, args)) return *done;
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  const json all = sessions_json(SessionStore(default_run_store()), now);
  if (as_json) {
    std::cout << all.dump(2) << std::endl;
    return kExitPassed;
  }
  if (all.empty()) std::cout << "no open sessions\n";
  for (const auto& s : all) {
    std::cout << s.value("session_id", "") << "  " << escape_for_terminal(s.value("seed", "")) << "  "
              << s.value("execs", 0) << " command(s)  opened " << age_text(now - s.value("created", now)) << " ago  "
              << (s.contains("expired") ? "expired: " + s.value("expired", "")
                                        : "expires in " + age_text(s.value("expires_in", std::int64_t{0})))
              << "\n";
  }
  return kExitPassed;
}

}  // namespace

// One table: the dispatch, `session --help` and the shell completion
// (command_shapes.h) read it.
const std::vector<Command>& session_subcommands() {
  using Args = const std::vector<std::string>&;
  static const std::vector<Command> table = {
      {"open", "make a session; prints its id", session_open},
      {"exec", "run a command in the session's working copy", session_exec},
      {"write", "write a file into the working copy", [](Args a) { return cmd_session_files("write", a); }},
      {"read", "print a file of the working copy", [](Args a) { return cmd_session_files("read", a); }},
      {"diff", "the working copy's change as a unified diff, judged by the patch contract",
       [](Args a) { return cmd_session_files("diff", a); }},
      {"prove", "prove the change through `test` (contract, sandbox, baseline, verdict)",
       [](Args a) { return cmd_session_files("prove", a); }},
      {"close", "remove the session's copy and record", session_close},
      {"list", "the open sessions", session_list},
  };
  return table;
}

namespace {

void print_session_help() {
  std::string names;
  for (const auto& c : session_subcommands()) names += (names.empty() ? "" : "|") + std::string(c.name);
  std::cout << "usage: lazyagent-oci session " << names << " ...\n\n"
               "An agent's working copy of a seed in which every command runs sandboxed (one long-lived\n"
               "sandbox with a persistent shell, or a fresh one per command; no network, no secrets,\n"
               "limits, verified), read back as hostile input and proven\n"
               "through the ordinary `test`. `lazyagent-oci session SUBCOMMAND --help` shows its options.\n\n"
               "subcommands:\n";
  for (const auto& c : session_subcommands()) {
    const std::string n = c.name;
    std::cout << "  " << n << std::string(n.size() < 15 ? 15 - n.size() : 1, ' ') << c.summary << "\n";
  }
}

}  // namespace

int cmd_session(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_session_help();
    return args.empty() ? kExitUsage : kExitPassed;
  }
  const std::string sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& c : session_subcommands()) {
    if (sub == c.name) return c.run(rest);
  }
  return report_error(usage_error("session: unknown subcommand '" + sub + "' (see `lazyagent-oci session --help`)"), false);
}

}  // namespace lazyagent
