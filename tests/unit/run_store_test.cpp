#include "catch_compat.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "store/ownership.h"
#include "store/run_store.h"
#include "policy/sandbox_policy.h"
#include "contract/seed_snapshot.h"
#include "unit_tmp.h"

using namespace lazyagent;
namespace fs = std::filesystem;

TEST_CASE("state dir follows XDG_STATE_HOME") {
  CHECK(default_state_dir("/x/state", "/home/u") == "/x/state/lazyagent-oci");
  CHECK(default_state_dir(nullptr, "/home/u") == "/home/u/.local/state/lazyagent-oci");
  CHECK(default_state_dir("relative", "/home/u") == "/home/u/.local/state/lazyagent-oci");
}

TEST_CASE("records are written atomically and read back newest first") {
  Tmp t;
  RunStore s(t.path);
  REQUIRE(s.write({{"run_id", "r-20260101-000000-aaaaaa"}, {"status", "passed"}}).ok());
  REQUIRE(s.write({{"run_id", "r-20260102-000000-bbbbbb"}, {"status", "failed"}}).ok());
  REQUIRE(s.write({{"run_id", "r-20260101-000000-aaaaaa"}, {"status", "error"}}).ok());
  std::vector<std::string> problems;
  auto recent = s.recent(10, &problems);
  REQUIRE(recent.size() == 2);
  CHECK(recent[0]["run_id"] == "r-20260102-000000-bbbbbb");
  CHECK(recent[1]["status"] == "error");
  CHECK(problems.empty());
  for (const auto& e : fs::directory_iterator(s.runs_dir())) {
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
  CHECK((fs::status(s.dir()).permissions() & fs::perms::others_read) == fs::perms::none);
}

TEST_CASE("bad run ids and torn files are reported, not trusted") {
  Tmp t;
  RunStore s(t.path);
  CHECK_FALSE(s.write({{"run_id", "../escape"}}).ok());
  CHECK(s.read("../x").error().message == "'../x' is not a run id");
  REQUIRE(s.ensure().ok());
  std::ofstream(s.runs_dir() + "/r-torn.json") << "{\"run_id\": \"r-to";
  std::vector<std::string> problems;
  CHECK(s.recent(5, &problems).empty());
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("is not valid JSON") != std::string::npos);
}

TEST_CASE("owner liveness uses pid and start time") {
  const Owner me = current_owner();
  auto labels = owner_labels(me, "sandbox", "r-1");
  CHECK(owner_alive(labels));
  labels[kLabelPidStart] = "1";  // same pid, different process start: recycled pid
  CHECK_FALSE(owner_alive(labels));
  labels[kLabelPid] = "999999999";
  CHECK_FALSE(owner_alive(labels));
  labels[kLabelOwner] = "0@some-other-host";
  CHECK(owner_alive(labels));  // not ours to judge
}

TEST_CASE("run ids sort by time") {
  const std::string a = new_run_id();
  CHECK(a.rfind("r-", 0) == 0);
  CHECK(a.size() == std::string("r-20261202-153012-3fa9c1").size());
}

TEST_CASE("seed snapshot: no symlink following, special files refused, copy with patch") {
  Tmp t;
  const std::string seed = t.path + "/seed";
  fs::create_directories(seed + "/pkg");
  std::ofstream(seed + "/calculator.py") << "def add(a, b):\n    return a - b\n";
  std::ofstream(seed + "/pkg/x.py") << "x = 1\n";
  fs::create_symlink("/etc/passwd", seed + "/link");
  auto snap = snapshot_seed_source(seed, SeedConfig{});
  REQUIRE(snap.ok());
  CHECK(snap->entries.size() == 4);
  const std::string h1 = snap->sha256;

  Patch patch;
  patch.files.push_back({"calculator.py", "def add(a, b):\n    return a + b\n"});
  patch.files.push_back({"pkg/new.py", "y = 2\n"});
  CHECK(changed_paths(*snap, patch) == std::vector<std::string>{"calculator.py", "pkg/new.py"});
  CHECK(check_patch_against_seed(*snap, patch).empty());
  REQUIRE(write_seed_copy(*snap, {{"calculator.py", patch.files[0].content, 0644, false}, {"pkg/new.py", "y = 2\n", 0644, false}},
                        t.path + "/copy")
              .ok());
  std::ifstream in(t.path + "/copy/calculator.py");
  std::string content((std::istreambuf_iterator<char>(in)), {});
  CHECK(content == "def add(a, b):\n    return a + b\n");
  CHECK(fs::is_symlink(t.path + "/copy/link"));
  CHECK(snapshot_seed_source(seed, SeedConfig{})->sha256 == h1);  // the user's seed is untouched

  Patch through;
  through.files.push_back({"link", "x"});
  auto f = check_patch_against_seed(*snap, through);
  REQUIRE(f.size() == 1);
  CHECK(f[0].code == "through_symlink");

  mkfifo((seed + "/fifo").c_str(), 0600);
  auto refused = snapshot_seed_source(seed, SeedConfig{});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("special file") != std::string::npos);
}
