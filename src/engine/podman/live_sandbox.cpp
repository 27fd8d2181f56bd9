#include "engine/podman/live_sandbox.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "engine/podman/log_stream.h"
#include "engine/podman/podman_engine.h"
#include "util/atomic_file.h"
#include "engine/podman/warm_spares.h"
#include "policy/isolation_probe.h"
#include "policy/live_shell.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

// What an exec printed, demultiplexed, at most `max` bytes.
struct LiveExecOutput {
  std::string text;
  int exit_code = -1;
};

Result<LiveExecOutput> run_live_exec(PodmanClient& podman, const std::string& id, const std::vector<std::string>& argv,
                           long timeout_ms, std::size_t max) {
  auto exec = podman.exec_create(id, argv, "/");
  if (!exec) return exec.error();
  LiveExecOutput c;
  FrameDemux demux;
  auto st = podman.exec_start(*exec, [&](std::string_view chunk) {
    demux.feed(chunk, [&](std::string_view t) {
      if (c.text.size() < max) c.text.append(t.substr(0, max - c.text.size()));
    });
  }, timeout_ms);
  if (!st) return st.error();
  auto code = podman.exec_exit_code(*exec);
  if (!code) return code.error();
  c.exit_code = *code;
  return c;
}

class PodmanLive : public LiveSandbox {
 public:
  PodmanLive(PodmanClient& podman, std::string id) : podman_(podman), id_(std::move(id)) {}

  std::string id() const override { return id_; }

  Result<LiveExit> exec(const LiveCommand& c) override {
    auto exec = podman_.exec_create(id_, live_command_argv(c.number, c.command), "/work");
    if (!exec) return ended_or(exec.error());
    if (c.started != nullptr) *c.started = true;
    LiveStream stream(c.head_bytes, c.tail_bytes, c.output);
    FrameDemux demux;
    auto st = podman_.exec_start(*exec, [&](std::string_view chunk) {
      demux.feed(chunk, [&](std::string_view t) { stream.feed(t); });
    }, c.deadline_ms);
    LiveExit r;
    if (!st && (st.error().kind == ErrorKind::kTimeout || st.error().kind == ErrorKind::kInterrupted)) {
      // The deadline (or a signal): the command's processes end, the session lives on.
      if (auto ended = end_command(c.number); !ended) return ended.error().context("ending a command at its deadline");
      if (st.error().kind == ErrorKind::kInterrupted) return st.error();
      r.timed_out = true;
    } else if (!st) {
      return ended_or(st.error());
    }
    LiveOutput out = stream.finish();
    r.output = std::move(out.output);
    r.truncated = out.truncated;
    r.fresh_shell = out.fresh_shell;
    r.shell = out.shell;
    if (r.timed_out) {
      r.exit_code = 137;
      r.shell_ended = out.shell_ended;
      return r;
    }
    auto client = podman_.exec_exit_code(*exec);
    if (!client) return client.error();
    if (*client == 125 && out.shell.empty()) {
      return engine_error("the session's shell could not be started in its sandbox (exit 125): " +
                          to_valid_utf8(r.output.substr(0, 512)));
    }
    if (!out.ended || *client != 0) {
      // Its client ended without the end line: the command ended it (and
      // the shell with it, most likely); the next command starts afresh.
      r.shell_ended = true;
      r.exit_code = -1;
      return r;
    }
    r.exit_code = out.exit_code;
    r.shell_ended = out.shell_ended;
    return r;
  }

  Status end_command(std::int64_t number) override {
    auto done = run_live_exec(podman_, id_, live_end_argv(number), 30000, 4096);
    if (!done) return ended_or(done.error()).error();
    if (done->exit_code != 0) {
      return engine_error("ending command " + std::to_string(number) + " in the session's sandbox: exit " +
                          std::to_string(done->exit_code) + ": " + to_valid_utf8(done->text.substr(0, 512)));
    }
    return ok_status();
  }

  Status freeze() override { return podman_.pause(id_); }

  Status thaw() override {
    auto st = podman_.unpause(id_);
    if (!st) {
      // Not paused (a thaw after a crash mid-read found it running): fine.
      auto info = podman_.inspect(id_);
      if (info && (*info)["State"].is_object() && !(*info)["State"].value("Paused", true)) return ok_status();
    }
    return st;
  }

  Status remove() override { return podman_.remove(id_); }

 private:
  // An error from the exec API: when the container is gone or stopped, says
  // that the sandbox has ended (its deadline, or its first process killed).
  Result<LiveExit> ended_or(const Error& e) {
    auto info = podman_.inspect(id_);
    const bool running = info && (*info)["State"].is_object() && (*info)["State"].value("Running", false);
    if (e.kind != ErrorKind::kUnreachable && !running) {
      return usage_error("the session's sandbox has ended (it reached sessions.max_age_seconds, or its first "
                         "process was killed): close the session and open another");
    }
    return e;
  }

  PodmanClient& podman_;
  std::string id_;
};

}  // namespace

Result<std::unique_ptr<LiveSandbox>> open_podman_live(PodmanClient& podman, const SandboxRequest& req) {
  ScopedContainer container(podman);
  auto reply = podman.create(build_create_spec(req));
  if (!reply) return reply.error().context("creating the session's sandbox");
  container.hold(reply->id);
  if (auto st = podman.init(reply->id); !st) return st.error().context("initialising the session's sandbox");
  if (auto v = verify_sandbox_container(podman, req, reply->id); !v) return v.error();
  if (auto st = podman.start(reply->id); !st) return st.error().context("starting the session's sandbox");
  auto probe = run_live_exec(podman, reply->id, live_probe_argv(egress_targets_arg(req.policy)), 60000, 64 * 1024);
  if (!probe) return probe.error().context("running the isolation probe in the session's sandbox");
  std::string rest;
  const ProbeReport report = take_probe(to_valid_utf8(probe->text), &rest);
  std::vector<std::string> violations = probe_violations(report, req.policy, req.runtime);
  if (!report.found) violations.push_back("the probe printed no report (exit " + std::to_string(probe->exit_code) + ")");
  if (!violations.empty()) {
    std::string all;
    for (const auto& v : violations) all += (all.empty() ? "" : "; ") + v;
    return Error{ErrorKind::kIsolation, "the isolation probe inside the session's sandbox found: " + all};
  }
  auto live = std::make_unique<PodmanLive>(podman, reply->id);
  container.hold("");  // the session owns it from here
  return std::unique_ptr<LiveSandbox>(std::move(live));
}

std::unique_ptr<LiveSandbox> podman_live(PodmanClient& podman, const std::string& id) {
  return std::make_unique<PodmanLive>(podman, id);
}

Result<std::unique_ptr<LiveSandbox>> PodmanEngine::open_live(const SandboxSpec& spec, std::int64_t lifetime_seconds) {
  if (spec.session_copy.empty() || lifetime_seconds <= 0) return usage_error("a live sandbox needs a session's working copy and a lifetime");
  const std::string dir = spec.session_copy.substr(0, spec.session_copy.rfind('/')) + "/live";
  if (auto st = remove_tree(dir); !st) return st.error();
  if (::mkdir(dir.c_str(), 0700) != 0) return engine_error("creating " + dir + ": " + std::strerror(errno));
  SandboxRequest req;
  req.policy = spec.policy;
  req.name = "lazyagent-session-" + spec.run_id;
  // No owner process (io.lazyagent.owner, .pid): the session owns it, and
  // outlives the process that opened it. A reaper judging by owner pid
  // (this tool before live sessions, still on the host) leaves a container
  // without one alone; ours judges it by its session (live_sandbox.h).
  req.labels = {{kLabelRole, kRoleSession}, {kLabelRun, spec.run_id}};
  req.labels[kLabelSessionStore] = store_.dir();
  req.labels[kLabelSessionEnds] = std::to_string(static_cast<std::int64_t>(std::time(nullptr)) + lifetime_seconds);
  req.seccomp_profile_path = dir + "/seccomp.json";
  req.work_copy_path = spec.session_copy;
  req.live_seconds = lifetime_seconds;
  req.runtime = sandbox_runtime();
  if (auto st = write_file_atomic(req.seccomp_profile_path, req.policy.seccomp.dump()); !st) return st.error();
  return open_podman_live(*sandbox_, req);
}

std::unique_ptr<LiveSandbox> PodmanEngine::live(const std::string& id) { return podman_live(*sandbox_, id); }

bool live_session_kept(const std::map<std::string, std::string>& labels, const std::string& store_dir,
                       std::time_t now) {
  auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  };
  if (get(kLabelSessionStore) != store_dir) return true;  // another run store's
  try {
    if (std::stoll(get(kLabelSessionEnds)) <= now) return false;
  } catch (...) {
    return false;
  }
  const std::string run = get(kLabelRun);
  if (run.empty() || run.find('/') != std::string::npos || run[0] == '.') return false;
  struct stat st {};
  return ::lstat((store_dir + "/sessions/" + run + "/session.json").c_str(), &st) == 0;
}

}  // namespace lazyagent
