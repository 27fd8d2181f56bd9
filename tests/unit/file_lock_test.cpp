// util/file_lock.h: one holder at a time across open files (as across
// processes), the waiter told once, and refusals that name the path.
#include "catch_compat.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "unit_tmp.h"
#include "util/file_lock.h"

using lazyagent::FileLock;

TEST_CASE("file lock: a second holder waits, is told once, and gets the lock when the first lets go") {
  Tmp t;
  const std::string path = t.path + "/a.lock";
  std::optional<FileLock> first;
  first.emplace(path);
  REQUIRE(first->held());
  std::atomic<int> waits{0};
  std::atomic<bool> got{false};
  std::thread second([&] {
    FileLock l(path, [&] { ++waits; });
    got = l.held();
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (waits.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(waits.load() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(got.load());  // still waiting while the first holds it
  first.reset();
  second.join();
  CHECK(got.load());
  CHECK(waits.load() == 1);

  // Free again: no wait at all.
  bool waited = false;
  FileLock third(path, [&] { waited = true; });
  CHECK(third.held());
  CHECK_FALSE(waited);
}

TEST_CASE("file lock: no directory or a symlink is no lock, and the error names the path") {
  Tmp t;
  FileLock missing(t.path + "/no/such/dir.lock");
  CHECK_FALSE(missing.held());
  CHECK(missing.error().find(t.path + "/no/such/dir.lock") != std::string::npos);

  const std::string link = t.path + "/link.lock";
  REQUIRE(::symlink((t.path + "/elsewhere").c_str(), link.c_str()) == 0);
  FileLock through(link);
  CHECK_FALSE(through.held());
  CHECK(through.error().find(link) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(t.path + "/elsewhere"));  // nothing created through the link
}
