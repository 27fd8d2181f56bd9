#include "catch_compat.h"

#include "policy/sandbox_policy.h"

using namespace lazyagent;
using nlohmann::json;

namespace {
SandboxRequest request() {
  SandboxRequest r;
  r.policy.image = "localhost/lazyagent-sandbox:latest";
  r.name = "lazyagent-sandbox-r-1";
  r.labels = {{kLabelRole, "sandbox"}, {kLabelRun, "r-1"}};
  r.seed_copy_path = "/state/work/r-1/seed";
  r.test_command = "python3 -m unittest -v";
  return r;
}
}  // namespace

TEST_CASE("the create request uses the field names podman 4.3 honours") {
  const json s = build_create_spec(request());
  CHECK(s["netns"] == json{{"nsmode", "none"}});
  CHECK(s["cap_drop"] == json::array({"ALL"}));
  CHECK(s["no_new_privileges"] == true);
  CHECK(s["read_only_filesystem"] == true);
  CHECK(s["unsetenvall"] == true);
  CHECK(s["resource_limits"]["memory"]["limit"] == 512LL << 20);
  CHECK(s["resource_limits"]["pids"]["limit"] == 256);
  CHECK(s["resource_limits"]["cpu"] == json{{"quota", 100000}, {"period", 100000}});
  CHECK(s["r_limits"][0] == json{{"type", "nofile"}, {"soft", 1024}, {"hard", 1024}});
  CHECK(s["r_limits"][1]["type"] == "nproc");
  CHECK(s["log_configuration"]["driver"] == "k8s-file");
  CHECK(s["labels"]["io.lazyagent.role"] == "sandbox");
  CHECK_FALSE(s.contains("secrets"));
  CHECK_FALSE(s["netns"].contains("mode"));  // the misspelling podman ignores
}

TEST_CASE("mounts: two size-capped tmpfs and the private copy read-only, nothing else") {
  const json m = build_create_spec(request())["mounts"];
  REQUIRE(m.size() == 3);
  CHECK(m[0]["destination"] == "/work");
  CHECK(m[0]["type"] == "tmpfs");
  CHECK(m[0]["options"] == json::array({"rw", "nosuid", "nodev", "size=67108864", "mode=1777"}));
  CHECK(m[1]["destination"] == "/tmp");
  CHECK(std::find(m[1]["options"].begin(), m[1]["options"].end(), "noexec") != m[1]["options"].end());
  CHECK(m[2]["destination"] == "/seed");
  CHECK(m[2]["source"] == "/state/work/r-1/seed");
  CHECK(m[2]["options"] == json::array({"bind", "ro", "nosuid", "nodev", "noexec"}));
}

TEST_CASE("the environment is exactly the allowlist") {
  const json env = build_create_spec(request())["env"];
  CHECK(env.size() == 6);
  CHECK(env["HOME"] == "/work");
  CHECK(env["TMPDIR"] == "/work/.lazyagent-tmp");  // executable, unlike /tmp
  CHECK_FALSE(env.contains("CODING_AGENT_API_KEY"));
}

TEST_CASE("the test command travels as an argument, never spliced into the script") {
  const auto cmd = sandbox_command("python3 -m unittest -v; echo \"$x\"", 1048576);
  REQUIRE(cmd.size() == 8);
  CHECK(cmd[0] == "/bin/sh");
  CHECK(cmd[2].rfind("cp -R /seed/. /work/ && mkdir -p /work/.lazyagent-tmp && cd /work || exit 125\n", 0) == 0);
  CHECK(cmd[2].find("/bin/sh -c \"$1\"") != std::string::npos);
  CHECK(cmd[2].find("unittest") == std::string::npos);
  CHECK(cmd[7].empty());  // no egress probe targets but what the probe finds itself
  CHECK(sandbox_command("x", 8192, "api=10.0.0.1:443")[7] == "api=10.0.0.1:443");
  CHECK(cmd[2].find("\"$4\"") != std::string::npos);
  CHECK(cmd[4] == "python3 -m unittest -v; echo \"$x\"");
  CHECK(cmd[5] == "983040");  // head: the budget less the 64 KiB tail
  CHECK(cmd[6] == "65536");
  CHECK(sandbox_command("x", 8192)[5] == "4096");
}

TEST_CASE("the output plumbing leaves no node where the test looks") {
  const std::string script = sandbox_command("python3 -m unittest -v", 1048576)[2];
  // No FIFO, nothing under /work (but the test's empty $TMPDIR, made before it
  // starts) or /run; the one file (the tail's store, in
  // /tmp) is unlinked before the test starts, and the test runs with every
  // plumbing descriptor closed (3: status pipe, 4: the log, 5-7: the store).
  CHECK(script.find("mkfifo") == std::string::npos);
  const auto scratch = script.find("mkdir -p /work/.lazyagent-tmp ");
  REQUIRE(scratch != std::string::npos);
  CHECK(script.find("/work/.", scratch + 10) == std::string::npos);
  CHECK(script.find("/run") == std::string::npos);
  const auto created = script.find("exec 5>\"$t\" 6<\"$t\" 7<\"$t\" && rm -f \"$t\"");
  const auto test = script.find("/bin/sh -c \"$1\" </dev/null 2>&1 3>&- 4>&- 5>&- 6<&- 7<&-");
  REQUIRE(created != std::string::npos);
  REQUIRE(test != std::string::npos);
  CHECK(created < test);
  std::size_t tmp_mentions = 0;
  for (auto at = script.find("/tmp/"); at != std::string::npos; at = script.find("/tmp/", at + 1)) ++tmp_mentions;
  CHECK(tmp_mentions == 1);  // t=/tmp/.lazyagent-tail.$$
}

TEST_CASE("policy comes from config limits") {
  Config c;
  c.limits.memory_mib = 256;
  c.limits.cpus = 0.5;
  c.limits.pids = 64;
  const SandboxPolicy p = policy_from_config(c, 30);
  CHECK(p.memory_bytes == 256LL << 20);
  CHECK(p.cpu_quota == 50000);
  CHECK(p.pids == 64);
  CHECK(p.timeout_seconds == 30);
  const json j = policy_to_json(p);
  CHECK(j["cpus"] == 0.5);
  CHECK(j["network"] == "none");
}
