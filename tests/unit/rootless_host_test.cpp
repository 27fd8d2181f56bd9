// A user's rootless podman (rootless_host.h): the subordinate range, the
// mapping into it, the limits cgroup v1 cannot enforce and their refusal,
// the verifier not demanding them, and the copy made readable, not chowned.
#include "catch_compat.h"

#include <sys/stat.h>

#include <fstream>

#include "config.h"
#include "engine/podman/rootless_host.h"
#include "podman_fixtures.h"
#include "policy/runtime_policy.h"
#include "unit_tmp.h"

using namespace lazyagent;
using Strings = std::vector<std::string>;

namespace {

RootlessHost v1_user() {
  RootlessHost h;
  h.rootless = true;
  h.uid = 1001;
  h.user = "rl";
  h.subuid = IdRange{100000, 65536};
  h.subgid = IdRange{200000, 65536};
  fill_gaps(&h);
  return h;
}

}  // namespace

TEST_CASE("the first subordinate range of a user, by name or uid", "[rootless]") {
  const std::string text = "# comment\nother:100000:65536\nrl:165536:65536\nrl:300000:10\n1001:500000:70000\n";
  auto r = subordinate_range(text, "rl", 1234);
  REQUIRE(r);
  CHECK(r->start == 165536);
  CHECK(r->count == 65536);
  auto by_uid = subordinate_range(text, "nobody-here", 1001);
  REQUIRE(by_uid);
  CHECK(by_uid->start == 500000);
  CHECK_FALSE(subordinate_range(text, "ghost", 4242));
  CHECK_FALSE(subordinate_range("rl:abc:65536\nrl:100000:\n", "rl", 1));
}

TEST_CASE("rootless on cgroup v1 cannot enforce memory, pids or cpu, v2 with delegation can", "[rootless]") {
  RootlessHost h = v1_user();
  CHECK(h.gaps == Strings{"memory", "pids", "cpu"});
  CHECK(h.gaps_reason.rfind("rootless podman on cgroup v1: ", 0) == 0);
  h.cgroup_v2 = true;
  h.delegated = {"cpuset", "cpu", "io", "memory", "pids"};
  fill_gaps(&h);
  CHECK(h.gaps.empty());
  h.delegated = {"memory"};
  fill_gaps(&h);
  CHECK(h.gaps == Strings{"pids", "cpu"});
  CHECK(h.gaps_reason.find("user@1001.service") != std::string::npos);
  RootlessHost root;  // root's service: nothing missing
  fill_gaps(&root);
  CHECK(root.gaps.empty());
}

TEST_CASE("only rootless podman on cgroup v1 has no freezer for a live session's sandbox", "[rootless][quick]") {
  SandboxPolicy v1;
  REQUIRE(adapt_policy_to_host(v1_user(), &v1).ok());
  CHECK(v1.no_freezer.rfind("rootless podman on cgroup v1: ", 0) == 0);
  RootlessHost v2 = v1_user();
  v2.cgroup_v2 = true;  // no controller delegated: cgroup.freeze is in every v2 cgroup all the same
  fill_gaps(&v2);
  SandboxPolicy p2;
  REQUIRE(adapt_policy_to_host(v2, &p2).ok());
  CHECK_FALSE(p2.host_gaps.empty());
  CHECK(p2.no_freezer.empty());
  SandboxPolicy rooted;
  REQUIRE(adapt_policy_to_host(RootlessHost{}, &rooted).ok());
  CHECK(rooted.no_freezer.empty());
}

TEST_CASE("the sandbox's ids map into the user's subordinate range, never the user's uid", "[rootless]") {
  SandboxPolicy p;
  REQUIRE(adapt_policy_to_host(v1_user(), &p).ok());
  CHECK(p.userns.rootless);
  CHECK(p.userns.host_id == 1);  // the service's id 1: the first subordinate id
  CHECK(p.userns.outer_uid == 100000);
  CHECK(p.userns.outer_gid == 200000);
  CHECK(p.host_gaps == Strings{"memory", "pids", "cpu"});
  const auto j = policy_to_json(p);
  CHECK(j["user"]["mode"] == "rootless_user_namespace");
  CHECK(j["user"]["host_uids"] == nlohmann::json::array({100000, 165535}));
  CHECK(j["user"]["host_gids"] == nlohmann::json::array({200000, 265535}));
  CHECK(describe_mapping(v1_user(), p.userns) ==
        "rootless podman of rl (uid 1001): sandbox ids map to its subordinate ids, host uids 100000..165535, "
        "gids 200000..265535, never uid 1001");

  RootlessHost none = v1_user();
  none.subuid.reset();
  SandboxPolicy q;
  const Status st = adapt_policy_to_host(none, &q);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::kUsage);
  CHECK(st.error().message ==
        "the podman service runs as rl (rootless), who has no subordinate ids in /etc/subuid: the sandbox's root "
        "must be one of them, never rl's own uid; as root, run scripts/setup-rootless.sh rl");
  RootlessHost few = v1_user();
  few.subgid = IdRange{200000, 1000};
  CHECK(adapt_policy_to_host(few, &q).error().message.find("who has 1000 subordinate ids, fewer than") !=
        std::string::npos);

  SandboxPolicy rooted;  // root's service: the configured high range, unchanged
  REQUIRE(adapt_policy_to_host(RootlessHost{}, &rooted).ok());
  CHECK(rooted.userns.host_id == 1879048192);
  CHECK_FALSE(rooted.userns.rootless);
}

TEST_CASE("the host's gaps are refused by name unless accepted, then listed as not enforced", "[rootless]") {
  const RootlessHost h = v1_user();
  Config c;
  const Status st = check_host_gaps(c, h.gaps, h.gaps_reason);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::kUsage);
  CHECK(st.error().message.rfind("this host's podman cannot enforce the sandbox's memory (limits.memory_mib: "
                                 "512 MiB), pids (limits.pids: 256), cpu (limits.cpus: 1) limits (rootless "
                                 "podman on cgroup v1: ",
                                 0) == 0);
  CHECK(st.error().message.find("--accept-weaker-policy") != std::string::npos);
  c.limits.cpus = 1.5;
  CHECK(check_host_gaps(c, h.gaps, h.gaps_reason).error().message.find("cpu (limits.cpus: 1.5)") !=
        std::string::npos);
  c.engine.accept_weaker_policy = true;
  CHECK(check_host_gaps(c, h.gaps, h.gaps_reason).ok());
  CHECK(check_host_gaps(Config{}, {}, "").ok());

  SandboxPolicy p;
  REQUIRE(adapt_policy_to_host(h, &p).ok());
  const auto j = effective_policy_json(p, "runc", true);
  CHECK(j["not_enforced"] == nlohmann::json::array({"memory", "pids", "cpu"}));
  CHECK(j["weaker_policy_accepted"] == true);
  CHECK(j["not_enforced_reason"] == h.gaps_reason);
  const auto& enforced = j["enforced"];
  for (const char* item : {"nofile", "nproc", "tmpfs_size", "user_namespace", "network", "seccomp"}) {
    CHECK(std::find(enforced.begin(), enforced.end(), item) != enforced.end());
  }
  CHECK_FALSE(effective_policy_json(SandboxPolicy{}, "runc", false).contains("not_enforced_reason"));
}

TEST_CASE("the verifier does not demand limits the host cannot set, and still demands the others", "[rootless]") {
  using namespace fixtures;
  Docs d;  // what rootless podman on cgroup v1 writes: no memory, pids or cpu
  d.spec["linux"]["resources"].erase("memory");
  d.spec["linux"]["resources"].erase("pids");
  d.spec["linux"]["resources"].erase("cpu");
  CHECK(codes(d) == Strings{"resources", "resources", "resources", "resources"});
  SandboxRequest r = captured_request();
  r.policy.host_gaps = {"memory", "pids", "cpu"};
  CHECK(codes(d, r).empty());
  r.policy.host_gaps = {"memory"};
  CHECK(codes(d, r) == Strings{"resources", "resources", "resources"});
}

TEST_CASE("rootless, the private copy is made readable by the sandbox instead of chowned", "[rootless]") {
  Tmp t;
  const std::string root = t.path + "/seed";
  REQUIRE(::mkdir(root.c_str(), 0700) == 0);
  REQUIRE(::mkdir((root + "/sub").c_str(), 0700) == 0);
  std::ofstream(root + "/sub/secret.txt") << "x";
  std::ofstream(root + "/run.sh") << "#!/bin/sh\n";
  ::chmod((root + "/sub/secret.txt").c_str(), 0600);
  ::chmod((root + "/run.sh").c_str(), 0700);
  REQUIRE(::symlink("/etc/shadow", (root + "/link").c_str()) == 0);
  UserNamespace u;
  u.rootless = true;
  REQUIRE(hand_copy_to_sandbox(root, u).ok());
  auto mode = [](const std::string& p) {
    struct stat st {};
    ::lstat(p.c_str(), &st);
    return st.st_mode & 07777;
  };
  CHECK(mode(root) == 0755);
  CHECK(mode(root + "/sub") == 0755);
  CHECK(mode(root + "/sub/secret.txt") == 0644);
  CHECK(mode(root + "/run.sh") == 0755);
  struct stat shadow {};
  ::stat("/etc/shadow", &shadow);
  CHECK((shadow.st_mode & 0004) == 0);  // a symlink's target is never touched
}
