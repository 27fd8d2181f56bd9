// What each runtime enforces, the refusal of unenforceable demands, and the
// choice of podman service per runtime (runtime_policy.h, runtime_engine.h).
#include "catch_compat.h"

#include "config.h"
#include "engine/podman/runtime_engine.h"
#include "policy/runtime_policy.h"

using namespace lazyagent;
using Strings = std::vector<std::string>;

namespace {

Config parsed(const std::string& yaml) {
  auto r = parse_config(yaml, "cfg.yaml", "/srv");
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("runc and crun enforce every policy item", "[runtime_policy]") {
  for (const char* runtime : {"runc", "crun"}) {
    const auto g = runtime_guarantees(runtime);
    CHECK(g.enforced == policy_items());
    CHECK(g.not_enforced.empty());
  }
}

TEST_CASE("runsc does not enforce memory, pids, cpu, masked paths or the id mapping", "[runtime_policy]") {
  const auto g = runtime_guarantees("runsc");
  CHECK(g.not_enforced == Strings{"memory", "pids", "cpu", "masked_paths", "user_namespace"});
  CHECK(g.enforced == Strings{"network", "capabilities", "no_new_privileges", "read_only_root", "seccomp",
                              "nofile", "nproc", "tmpfs_size", "tmpfs_noexec", "env_allowlist", "no_secrets",
                              "no_user_mounts", "timeout", "output_cap"});
}

TEST_CASE("an unknown runtime is credited with nothing the engine does", "[runtime_policy]") {
  const auto g = runtime_guarantees("kata");
  CHECK(g.enforced == Strings{"timeout", "output_cap"});
  CHECK(g.not_enforced.size() == policy_items().size() - 2);
}

TEST_CASE("the effective policy names the runtime and what it does not enforce", "[runtime_policy]") {
  SandboxPolicy p;
  const auto j = effective_policy_json(p, "runsc", true);
  CHECK(j["runtime"] == "runsc");
  CHECK(j["not_enforced"] == nlohmann::json::array({"memory", "pids", "cpu", "masked_paths", "user_namespace"}));
  CHECK(j["weaker_policy_accepted"] == true);
  CHECK(j["memory_bytes"] == 512LL << 20);  // still what was asked for, and said to be unenforced
  const auto r = effective_policy_json(p, "runc", true);
  CHECK(r["not_enforced"].empty());
  CHECK(r["weaker_policy_accepted"] == false);  // nothing weaker to accept
}

TEST_CASE("only limits the config sets are demands", "[runtime_policy]") {
  CHECK(parsed("seed: s\n").limits.set_in_config.empty());
  Config c = parsed("limits: {memory_mib: 256, nofile: 100}\nengine: {runtime: runsc}\n");
  CHECK(c.limits.set_in_config == Strings{"limits.memory_mib", "limits.nofile"});
  CHECK(unenforceable_demands(c, "runsc") == Strings{"limits.memory_mib (memory)"});
  CHECK(unenforceable_demands(c, "runc").empty());
}

TEST_CASE("an unenforceable demand is refused, naming each limit, unless accepted", "[runtime_policy]") {
  Config c = parsed("limits: {memory_mib: 256, pids: 10, cpus: 0.5}\nengine: {runtime: runsc}\n");
  const Status st = check_policy_acceptable(c);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::kUsage);
  CHECK(st.error().message ==
        "cfg.yaml demands limits.memory_mib (memory), limits.pids (pids), limits.cpus (cpu), which runsc does "
        "not enforce on this host; remove those limits, use --runtime runc, or accept the weaker policy with "
        "--accept-weaker-policy (or engine.accept_weaker_policy: true)");
  c.engine.accept_weaker_policy = true;
  CHECK(check_policy_acceptable(c).ok());
  CHECK(check_policy_acceptable(parsed("limits: {memory_mib: 256}\nengine: {runtime: runsc, accept_weaker_policy: true}\n")).ok());
  CHECK(check_policy_acceptable(parsed("limits: {memory_mib: 256}\n")).ok());       // runc
  CHECK(check_policy_acceptable(parsed("engine: {runtime: runsc}\n")).ok());        // no demand
}

TEST_CASE("engine keys are checked", "[runtime_policy]") {
  auto r = parse_config("engine: {accept_weaker_policy: yes, runsc_socket: rel.sock}\n", "cfg.yaml", "/srv");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "cfg.yaml: engine.accept_weaker_policy: expected true or false, got 'yes'\n"
        "cfg.yaml: engine.runsc_socket: expected an absolute socket path, got 'rel.sock'");
}

TEST_CASE("each runtime has its own podman service", "[runtime_policy]") {
  EngineConfig e;
  CHECK(*resolve_runtime_socket("runc", e, "unix:///x/runsc.sock", nullptr, 0, nullptr) == "/run/podman/podman.sock");
  CHECK(*resolve_runtime_socket("runc", e, nullptr, "unix:///y/p.sock", 0, nullptr) == "/y/p.sock");
  CHECK(*resolve_runtime_socket("runsc", e, nullptr, "unix:///y/p.sock", 0, nullptr) ==
        "/run/podman/lazyagent-runsc.sock");
  CHECK(*resolve_runtime_socket("runsc", e, "unix:///x/runsc.sock", nullptr, 0, nullptr) == "/x/runsc.sock");
  e.runsc_socket = "/z/g.sock";
  CHECK(*resolve_runtime_socket("runsc", e, "", nullptr, 0, nullptr) == "/z/g.sock");
  auto bad = resolve_runtime_socket("runsc", e, "tcp://h:1", nullptr, 0, nullptr);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "LAZYAGENT_RUNSC_HOST=tcp://h:1: expected unix:///absolute/path");
  // crun is the default service's, as runc is.
  CHECK(*resolve_runtime_socket("crun", e, "unix:///x/runsc.sock", "unix:///y/p.sock", 0, nullptr) == "/y/p.sock");
  auto unknown = resolve_runtime_socket("kata", e, nullptr, nullptr, 0, nullptr);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message == "unknown OCI runtime 'kata' (expected runc, crun or runsc)");
}

TEST_CASE("the sandbox runs under the service's runc or crun, a setting that disagrees is a config error", "[runtime_policy]") {
  // Not set: whichever of the two the service runs.
  CHECK(*choose_sandbox_runtime("", "crun", "/s.sock") == "crun");
  CHECK(*choose_sandbox_runtime("", "runc", "/s.sock") == "runc");
  CHECK(*choose_sandbox_runtime("crun", "crun", "/s.sock") == "crun");
  CHECK(*choose_sandbox_runtime("runsc", "runsc", "/g.sock") == "runsc");
  // Set to the other one: kUsage (exit 2, never retried), naming both and the fix.
  auto other = choose_sandbox_runtime("runc", "crun", "/s.sock");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().kind == ErrorKind::kUsage);
  CHECK(other.error().message.find("the podman service on /s.sock runs OCI runtime 'crun', not 'runc' "
                                   "(engine.runtime or --runtime): drop the setting") == 0);
  CHECK(other.error().message.find("started with --runtime runc") != std::string::npos);
  // A runtime the policy is not verified under, set or not.
  for (const char* requested : {"", "runc"}) {
    auto kata = choose_sandbox_runtime(requested, "kata", "/s.sock");
    REQUIRE_FALSE(kata.ok());
    CHECK(kata.error().kind == ErrorKind::kUsage);
    CHECK(kata.error().message.find("runs OCI runtime 'kata', which the sandbox policy is not verified under") !=
          std::string::npos);
  }
  auto none = choose_sandbox_runtime("", "", "/s.sock");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("runs OCI runtime '' (it names none)") != std::string::npos);
  // runsc asked of a service that runs runc: its own service is another.
  auto wrong = choose_sandbox_runtime("runsc", "runc", "/run/podman/podman.sock");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().kind == ErrorKind::kUsage);
  CHECK(wrong.error().message.find("not 'runsc': point LAZYAGENT_RUNSC_HOST or engine.runsc_socket") !=
        std::string::npos);
}

TEST_CASE("engine.runtime takes crun, and marks the runtime as the user's choice", "[runtime_policy]") {
  CHECK_FALSE(parsed("seed: s\n").engine.runtime_explicit);
  const Config c = parsed("engine: {runtime: crun}\n");
  CHECK(c.engine.runtime == "crun");
  CHECK(c.engine.runtime_explicit);
  auto bad = parse_config("engine: {runtime: kata}\n", "cfg.yaml", "/srv");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "cfg.yaml: engine.runtime: expected 'runc', 'crun' or 'runsc', got 'kata'");
}
