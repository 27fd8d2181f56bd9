// Records of runs whose process died (kill -9): the run store's active/
// markers, and the reaper closing such records as "interrupted".
#include "catch_compat.h"

#include <filesystem>
#include <fstream>

#include "store/ownership.h"
#include "store/provenance.h"
#include "store/store_sweep.h"
#include "store/run_store.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json owner_json(const Owner& o) { return {{"user_host", o.user_host}, {"pid", o.pid}, {"start_time", o.start_time}}; }

// A process on this host that is gone: no such pid.
Owner dead_owner() {
  Owner o = current_owner();
  o.pid = 999999999;
  o.start_time = "12345";
  return o;
}

json record(const std::string& id, const std::string& status, const Owner& o) {
  json r = {{"run_id", id}, {"status", status}, {"kind", "test"}, {"owner", owner_json(o)},
            {"tests_passed", false}, {"test_exit_code", -1}, {"seed_sha256", ""}, {"patch_sha256", ""}};
  r["provenance"] = build_provenance(r);
  return r;
}

}  // namespace

TEST_CASE("an unfinished record has an active marker until a finished one replaces it") {
  Tmp t;
  RunStore s(t.path);
  const std::string id = "r-20260101-000000-aaaaaa";
  REQUIRE(s.write(record(id, "running", current_owner())).ok());
  CHECK(fs::exists(s.active_dir() + "/" + id));
  CHECK(s.active_run_ids() == std::vector<std::string>{id});
  REQUIRE(s.write(record(id, "running", current_owner())).ok());  // rewritten at each step: one marker
  CHECK(s.active_run_ids().size() == 1);
  REQUIRE(s.write(record(id, "passed", current_owner())).ok());
  CHECK_FALSE(fs::exists(s.active_dir() + "/" + id));
  CHECK(s.active_run_ids().empty());
  // "planning" (run) and a record with no status yet (k8s's first write) are unfinished too.
  REQUIRE(s.write(record("r-20260101-000000-bbbbbb", "planning", current_owner())).ok());
  REQUIRE(s.write({{"run_id", "r-20260101-000000-cccccc"}, {"status", ""}}).ok());
  CHECK(s.active_run_ids().size() == 2);
  for (const char* st : {"passed", "failed", "refused", "error", "planner_error", "interrupted"}) {
    CHECK(is_finished_status(st));
  }
  for (const char* st : {"running", "planning", ""}) CHECK_FALSE(is_finished_status(st));
}

TEST_CASE("a record whose process is gone is closed as interrupted, with the reason, a live one is not touched") {
  Tmp t;
  RunStore s(t.path);
  const std::string dead = "r-20260101-000000-dead00", live = "r-20260101-000000-live00";
  REQUIRE(s.write(record(dead, "running", dead_owner())).ok());
  REQUIRE(s.write(record(live, "running", current_owner())).ok());
  const json live_before = *s.read(live);

  ReapReport report;
  close_abandoned_records(s, &report);
  CHECK(report.records_closed == std::vector<std::string>{dead});
  CHECK(report.errors.empty());

  const json closed = *s.read(dead);
  CHECK(closed["status"] == "interrupted");
  CHECK(closed["error"] == abandoned_run_reason("running", 999999999, current_owner().user_host));
  CHECK(closed["error"].get<std::string>().rfind("interrupted: the run's process (pid 999999999 on ", 0) == 0);
  CHECK(closed.contains("closed_at"));
  // The closed record is a consistent record (its provenance rebuilt), and
  // its marker is gone: the next reaper does not look at it again.
  StoredArtifacts none;
  CHECK(check_provenance(closed, none).empty());
  CHECK(s.active_run_ids() == std::vector<std::string>{live});

  CHECK(*s.read(live) == live_before);
  ReapReport again;
  close_abandoned_records(s, &again);
  CHECK(again.records_closed.empty());
}

TEST_CASE("markers of finished or missing records are dropped without touching any record") {
  Tmp t;
  RunStore s(t.path);
  const std::string id = "r-20260101-000000-eeeeee";
  REQUIRE(s.write(record(id, "running", dead_owner())).ok());
  // A finished record whose marker survived (a crash between the record and the unlink).
  json done = record(id, "failed", dead_owner());
  REQUIRE(s.write_in("runs", id, done).ok());
  // A marker whose record never got written.
  fs::create_directories(s.active_dir());
  { std::ofstream(s.active_dir() + "/r-20260101-000000-ffffff"); }
  REQUIRE(s.active_run_ids().size() == 2);
  ReapReport report;
  close_abandoned_records(s, &report);
  CHECK(report.records_closed.empty());
  CHECK(s.active_run_ids().empty());
  CHECK((*s.read(id))["status"] == "failed");
}
