// The MCP server's session tools (pipeline/session.h): session_open,
// session_exec, session_write_file, session_read_file, session_diff,
// session_prove, session_close. The same code as `lazyagent-oci session`
// (session_command.h); the server's config for every call, and only seeds in
// or under its mcp.seeds: a session id names a session only when its seed is
// one the server may use. Sessions live in the run store, so a client that
// reconnects (a new server process) continues them.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/cli_args.h"
#include "cli/mcp_args.h"
#include "cli/session_command.h"
#include "engine/warm_pool.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

struct SessionToolSetup {
  std::string config_path;
  std::vector<std::string> seeds;  // mcp.seeds
};

ProgressFn log_and(const ProgressFn& progress, const std::string& what) {
  return [progress, what](const std::string& step) {
    std::fprintf(stderr, "==> %s: %s\n", what.c_str(), escape_for_terminal(step).c_str());
    if (progress) progress(what + ": " + step);
  };
}

// A running command's output as MCP progress (notifications/progress when
// the call carried a progressToken): the last kShownBytes of what it printed
// so far, at most every kEveryMs (a thread sends what came since), the rest
// before the call answers. Every progress call of the exec goes through
// say(), one at a time.
class OutputProgress {
 public:
  static constexpr std::size_t kShownBytes = 4096;
  static constexpr int kEveryMs = 250;

  OutputProgress(ProgressFn progress, std::string what)
      : progress_(std::move(progress)), what_(std::move(what)), sender_([this] { send_loop(); }) {}
  ~OutputProgress() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    sender_.join();
    send_pending();
  }
  OutputProgress(const OutputProgress&) = delete;
  OutputProgress& operator=(const OutputProgress&) = delete;

  void line(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    // A per-command sandbox's probe lines come first: not the command's.
    if (total_ == 0 && text.rfind("lazyagent-probe: ", 0) == 0) return;
    tail_ += text;
    tail_ += '\n';
    total_ += text.size() + 1;
    if (tail_.size() > kShownBytes) tail_.erase(0, tail_.size() - kShownBytes);
    dirty_ = true;
  }

  void say(const std::string& text) {
    std::lock_guard<std::mutex> lock(say_mu_);
    if (progress_) progress_(text);
  }

 private:
  void send_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(kEveryMs), [this] { return stop_; });
      if (stop_) break;
      lock.unlock();
      send_pending();
      lock.lock();
    }
  }

  void send_pending() {
    std::string text;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dirty_) return;
      dirty_ = false;
      text = what_ + ": output so far (" + std::to_string(total_) + " bytes" +
             (total_ > tail_.size() ? "; the last " + std::to_string(tail_.size()) + " shown" : "") + "):\n" + tail_;
    }
    say(text);
  }

  ProgressFn progress_;
  std::string what_;
  std::mutex mu_, say_mu_;
  std::condition_variable cv_;
  std::string tail_;
  std::size_t total_ = 0;
  bool dirty_ = false, stop_ = false;
  std::thread sender_;  // last: started once the rest is ready
};

// The session_id argument (and the others `keys` lists), checked; the
// session's context when its seed is one the server may use.
Result<SessionContext> tool_session(const char* tool, const SessionToolSetup& s, const json& args,
                                    const std::vector<std::string>& keys, std::vector<std::string>* values) {
  std::vector<std::string> known = {"session_id"};
  known.insert(known.end(), keys.begin(), keys.end());
  McpArgs a(tool, args, known);
  std::vector<std::string> id;
  a.string("session_id", "", &id, true);
  for (const auto& k : keys) {
    std::vector<std::string> v;
    a.string(k.c_str(), "", &v, k != "timeout_seconds");
    values->push_back(v.size() == 2 ? v[1] : "");
  }
  if (auto st = a.status(); !st) return st.error();
  const RunStore store = default_run_store();
  auto rec = SessionStore(store).load(id[1]);
  if (!rec) return rec.error().context(tool);
  if (auto seed = check_mcp_seed(tool, rec->seed, s.seeds); !seed) return seed.error();
  auto ctx = session_context(id[1], store);
  if (!ctx) return ctx.error().context(tool);
  return ctx;
}

Result<json> mcp_session_open(const SessionToolSetup& s, const json& args, const ProgressFn& progress) {
  McpArgs a("session_open", args, {"seed", "test_command", "allow"});
  std::vector<std::string> argv;
  if (!s.config_path.empty()) argv = {"--config", s.config_path};
  a.string("seed", "--seed", &argv, true);
  a.string("test_command", "--test-command", &argv);
  a.strings("allow", "--allow", &argv);
  if (auto st = a.status(); !st) return st.error();
  ProjectOptions project;
  ArgParser p("session_open", "", "");
  add_project_options(p, &project);
  if (auto st = p.parse(argv); !st) return st.error().context("session_open");
  auto seed = check_mcp_seed("session_open", project.seed, s.seeds);
  if (!seed) return seed.error();
  project.seed = *seed;
  auto rec = open_session_for(project, false, default_run_store(), log_and(progress, "session_open"));
  if (!rec) return rec.error();
  return session_to_json(*rec);
}

Result<json> mcp_session_exec(const SessionToolSetup& s, const json& args, const ProgressFn& progress) {
  if (args.contains("timeout_seconds") &&
      (!args["timeout_seconds"].is_number_integer() || args["timeout_seconds"].get<long long>() < 1 ||
       args["timeout_seconds"].get<long long>() > 86400)) {
    return usage_error("session_exec: arguments.timeout_seconds: expected an integer between 1 and 86400, got " +
                       args["timeout_seconds"].dump());
  }
  json rest = args;
  rest.erase("timeout_seconds");
  std::vector<std::string> v;
  auto ctx = tool_session("session_exec", s, rest, {"command"}, &v);
  if (!ctx) return ctx.error();
  ExecRequest req;
  req.command = v[0];
  req.timeout_seconds = args.contains("timeout_seconds") ? args["timeout_seconds"].get<std::int64_t>()
                                                         : ctx->config.timeouts.test_seconds;
  // As `session exec` (per-command): the container is removed after the
  // answer, by a child holding the session's removals lock (session_close waits for it).
  SessionLock removals = defer_removal(*ctx->engine, SessionStore(default_run_store()), ctx->record);
  const std::string what = "session_exec " + ctx->record.id;
  std::optional<Result<ExecResult>> r;
  {
    OutputProgress streamed(progress, what);
    const ProgressFn said = log_and([&streamed](const std::string& t) { streamed.say(t); }, what);
    req.output = [&streamed](const std::string& line) { streamed.line(line); };
    r.emplace(exec_in_session(ctx->record.id, ctx->config, req, *ctx->engine, SessionStore(default_run_store()), said));
    if (const pid_t pid = remove_after_answer(*ctx->engine, std::move(removals)); pid > 0) {
      said("its container is removed after the answer (pid " + std::to_string(pid) + ")");
    }
  }
  if (!*r) return r->error();
  return exec_result_json(**r);
}

Result<json> mcp_session_write(const SessionToolSetup& s, const json& args) {
  std::vector<std::string> v;
  auto ctx = tool_session("session_write_file", s, args, {"path", "content"}, &v);
  if (!ctx) return ctx.error();
  if (v[1].size() > kSessionFileBytes) {
    return usage_error("session_write_file: arguments.content is larger than " + std::to_string(kSessionFileBytes) + " bytes");
  }
  if (!path_on_allowlist(v[0], ctx->config.allow)) {
    return usage_error("session_write_file: " + display_path(v[0]) + " is not on the allow list");
  }
  const SessionStore sessions(default_run_store());
  auto held = hold_session(ctx->record.id, ctx->engine.get(), sessions, HoldFor::kRead);
  if (!held) return held.error();
  if (auto st = write_session_file(held->record, sessions, v[0], v[1]); !st) {
    return st.error().context("session_write_file");
  }
  return json{{"session_id", ctx->record.id}, {"path", v[0]}, {"bytes", v[1].size()}};
}

Result<json> mcp_session_read(const SessionToolSetup& s, const json& args) {
  std::vector<std::string> v;
  auto ctx = tool_session("session_read_file", s, args, {"path"}, &v);
  if (!ctx) return ctx.error();
  const SessionStore sessions(default_run_store());
  auto held = hold_session(ctx->record.id, ctx->engine.get(), sessions, HoldFor::kRead);
  if (!held) return held.error();
  auto content = read_session_file(held->record, sessions, v[0], kSessionFileBytes);
  if (!content) return content.error().context("session_read_file");
  return json{{"session_id", ctx->record.id}, {"path", v[0]}, {"bytes", content->size()}, {"content", to_valid_utf8(*content)}};
}

Result<json> mcp_session_diff(const SessionToolSetup& s, const json& args) {
  std::vector<std::string> v;
  auto ctx = tool_session("session_diff", s, args, {}, &v);
  if (!ctx) return ctx.error();
  auto d = session_diff(*ctx, SessionStore(default_run_store()));
  if (!d) return d.error();
  return session_diff_json(ctx->record.id, *d);
}

Result<json> mcp_session_prove(const SessionToolSetup& s, const json& args, const ProgressFn& progress) {
  std::vector<std::string> v;
  auto ctx = tool_session("session_prove", s, args, {}, &v);
  if (!ctx) return ctx.error();
  auto r = session_prove(*ctx, default_run_store(), log_and(progress, "session_prove " + ctx->record.id));
  if (!r) return r.error();
  return result_to_json(*r);
}

Result<json> mcp_session_close(const SessionToolSetup& s, const json& args) {
  std::vector<std::string> v;
  auto ctx = tool_session("session_close", s, args, {}, &v);
  if (!ctx) return ctx.error();
  if (auto st = close_session(ctx->record.id, *ctx->engine, SessionStore(default_run_store())); !st) return st.error();
  return json{{"session_id", ctx->record.id}, {"closed", true}};
}

json schema(json properties, std::vector<std::string> required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", required}, {"additionalProperties", false}};
}

const json kSessionId = {{"type", "string"}, {"description", "the id session_open returned"}};

}  // namespace

std::vector<McpTool> mcp_session_tools(const std::string& config_path, const Config& config) {
  const auto s = std::make_shared<SessionToolSetup>(SessionToolSetup{config_path, config.mcp.seeds});
  const json path = {{"type", "string"}, {"description", "a path in the working copy (relative, as in a patch)"}};
  std::vector<McpTool> t;
  t.push_back({"session_open", "Open a sandboxed working copy",
               "Makes a private working copy of the seed in which session_exec runs commands in a sandbox (no "
               "network, no secrets, read-only root, limits, verified before it runs): by default one long-lived "
               "sandbox with a persistent shell. Returns the session's record with session_id. Sessions outlive "
               "the connection until session_close or their idle TTL.",
               schema({{"seed", {{"type", "string"}, {"description", "the project: one of the server's mcp.seeds or under one"}}},
                       {"test_command", {{"type", "string"}, {"description", "the command prove runs (default: the config's)"}}},
                       {"allow", {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "paths a change may touch"}}}},
                      {"seed"}),
               [s](const json& a, const ProgressFn& p) { return mcp_session_open(*s, a, p); }});
  t.push_back({"session_exec", "Run a command in the session",
               "Runs the command line in the session's shell (bash where the image has it, else sh) in the working "
               "copy (/work): cd, exports and background jobs carry over to the next command, as in a terminal "
               "(a per-command session: a fresh sandbox each time, nothing carries over). At timeout_seconds the "
               "command's processes are ended, the session lives on. Returns exit_code, output (bounded), "
               "truncated, timed_out, and for a live session shell_ended (the command ended the shell: the next "
               "gets a fresh one). With a progressToken, the output so far (its last 4 KiB) comes as "
               "notifications/progress while the command runs.",
               schema({{"session_id", kSessionId},
                       {"command", {{"type", "string"}}},
                       {"timeout_seconds", {{"type", "integer"}, {"minimum", 1}, {"maximum", 86400}}}},
                      {"session_id", "command"}),
               [s](const json& a, const ProgressFn& p) { return mcp_session_exec(*s, a, p); }});
  t.push_back({"session_write_file", "Write a file in the session",
               "Writes content at path in the working copy (the patch contract's path rules and allow list; no "
               "symlink followed).",
               schema({{"session_id", kSessionId}, {"path", path}, {"content", {{"type", "string"}}}},
                      {"session_id", "path", "content"}),
               [s](const json& a, const ProgressFn&) { return mcp_session_write(*s, a); }});
  t.push_back({"session_read_file", "Read a file of the session",
               "A regular file of the working copy, at most 4 MiB; symlinks are not followed, FIFOs and devices refused.",
               schema({{"session_id", kSessionId}, {"path", path}}, {"session_id", "path"}),
               [s](const json& a, const ProgressFn&) { return mcp_session_read(*s, a); }});
  t.push_back({"session_diff", "The session's change",
               "The working copy against the seed as a unified diff, with the patch contract's findings (ok: prove "
               "would take it).",
               schema({{"session_id", kSessionId}}, {"session_id"}),
               [s](const json& a, const ProgressFn&) { return mcp_session_diff(*s, a); }});
  t.push_back({"session_prove", "Prove the session's change",
               "The session's diff through the ordinary test (contract, fresh sandbox, baseline, verdict). Returns "
               "the result object of `test --json`; a passed run can be applied with `lazyagent-oci apply RUN_ID`.",
               schema({{"session_id", kSessionId}}, {"session_id"}),
               [s](const json& a, const ProgressFn& p) { return mcp_session_prove(*s, a, p); }});
  t.push_back({"session_close", "Close the session",
               "Removes the session's sandbox (and what runs in it), its working copy and record.",
               schema({{"session_id", kSessionId}}, {"session_id"}),
               [s](const json& a, const ProgressFn&) { return mcp_session_close(*s, a); }});
  return t;
}

}  // namespace lazyagent
