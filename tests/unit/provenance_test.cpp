// Provenance: hashes that link a run record's parts, and their recomputation
// (provenance.h). Each edit is planted and must be named.
#include "catch_compat.h"

#include <sys/stat.h>

#include <fstream>

#include "util/digest.h"
#include "contract/patch_contract.h"
#include "store/provenance.h"
#include "unit_tmp.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

const std::string kPatch = R"({"files":[{"path":"calculator.py","content":"def add(a, b):\n    return a + b\n"}]})";

json manifest() {
  return json::array({{{"kind", "f"}, {"mode", 420}, {"path", "calculator.py"}, {"sha256", sha256_hex("x\n")}},
                      {{"kind", "d"}, {"mode", 493}, {"path", "pkg"}, {"sha256", sha256_hex("")}}});
}

json record() {
  json r = {{"run_id", "r-1"},
            {"status", "passed"},
            {"tests_passed", true},
            {"test_exit_code", 0},
            {"test_output", "Ran 4 tests\n\nOK\n"},
            {"patch_sha256", sha256_hex(kPatch)},
            {"seed_sha256", *seed_sha256_from_manifest(manifest())},
            {"image_digest", "sha256:abc"},
            {"planner_task_id", "t-1"},
            {"policy", {{"runtime", "runsc"}, {"memory_bytes", 536870912}, {"not_enforced", {"memory"}}}}};
  r["provenance"] = build_provenance(r);
  return r;
}

StoredArtifacts stored() {
  StoredArtifacts a;
  a.patch = kPatch;
  a.seed_manifest = manifest();
  return a;
}

std::vector<std::string> parts(const json& rec, const StoredArtifacts& a = stored()) {
  std::vector<std::string> out;
  for (const auto& m : check_provenance(rec, a)) out.push_back(m.part);
  return out;
}

}  // namespace

TEST_CASE("a fresh record matches its provenance", "[provenance]") {
  const json r = record();
  CHECK(check_provenance(r, stored()).empty());
  const json& p = r["provenance"];
  CHECK(p["runtime"] == "runsc");
  CHECK(p["planner_task_id"] == "t-1");
  CHECK(p["verdict"] == json{{"status", "passed"}, {"tests_passed", true}, {"test_exit_code", 0}, {"reason", ""}});
  CHECK(p["policy_sha256"] == sha256_hex(r["policy"].dump()));
}

TEST_CASE("a record written before its policy is known (policy null) gets provenance too", "[provenance]") {
  json r = {{"run_id", "r-2"}, {"status", "planning"}, {"policy", nullptr}};
  REQUIRE_NOTHROW(r["provenance"] = build_provenance(r));
  CHECK(r["provenance"]["runtime"] == "runc");
  CHECK(r["provenance"]["policy_sha256"] == sha256_hex("{}"));
}

TEST_CASE("the hashes survive the run store's write and read", "[provenance]") {
  const json r = record();
  const json back = json::parse(r.dump(2) + "\n");
  CHECK(check_provenance(back, stored()).empty());
}

TEST_CASE("an edited stored patch is named", "[provenance]") {
  StoredArtifacts a = stored();
  a.patch->replace(a.patch->find("a + b"), 5, "a - b");
  const auto m = check_provenance(record(), a);
  REQUIRE(m.size() == 1);
  CHECK(m[0].part == "patch");
  CHECK(m[0].detail == "the stored patch hashes to " + sha256_hex(*a.patch) + ", the record says " + sha256_hex(kPatch));
  a.patch.reset();
  a.patch_problem = "no r-1.patch.json";
  CHECK(parts(record(), a) == std::vector<std::string>{"patch"});
}

TEST_CASE("an edited policy, verdict, or seed manifest is named, each one", "[provenance]") {
  json r = record();
  r["policy"]["not_enforced"] = json::array();
  CHECK(parts(r) == std::vector<std::string>{"policy", "result"});

  json v = record();
  v["tests_passed"] = false;
  CHECK(parts(v) == std::vector<std::string>{"verdict", "result"});

  json all = record();
  all["policy"]["memory_bytes"] = 1;
  all["status"] = "failed";
  StoredArtifacts a = stored();
  a.patch = "{}";
  a.seed_manifest->at(0)["sha256"] = sha256_hex("y\n");
  CHECK(parts(all, a) == std::vector<std::string>{"patch", "seed", "policy", "verdict", "result"});
}

TEST_CASE("an edit that also rewrites one hash is still caught", "[provenance]") {
  json r = record();
  r["tests_passed"] = false;
  r["status"] = "failed";
  r["provenance"]["verdict"] = verdict_of(r);
  r["provenance"]["verdict_sha256"] = canonical_sha256(verdict_of(r));
  CHECK(parts(r) == std::vector<std::string>{"provenance", "result"});
}

TEST_CASE("a record without provenance does not match", "[provenance]") {
  json r = record();
  r.erase("provenance");
  CHECK(parts(r) == std::vector<std::string>{"provenance"});
}

TEST_CASE("the seed hash is recomputed from the manifest exactly as the snapshot computes it", "[provenance]") {
  Tmp t;
  {
    std::ofstream(t.path + "/calculator.py") << "def add(a, b):\n    return a - b\n";
  }
  ::mkdir((t.path + "/pkg").c_str(), 0755);
  {
    std::ofstream(t.path + "/pkg/x.txt") << "x";
  }
  ::symlink("calculator.py", (t.path + "/link").c_str());
  auto snap = snapshot_seed_source(t.path, SeedConfig{});
  REQUIRE(snap.ok());
  const json m = seed_manifest(*snap);
  CHECK(m.size() == 4);
  CHECK(*seed_sha256_from_manifest(m) == snap->sha256);
  CHECK(*seed_sha256_from_manifest(json::parse(m.dump(1))) == snap->sha256);
  json bad = m;
  bad[0].erase("mode");
  CHECK(seed_sha256_from_manifest(bad).error().message == "seed manifest entry 0 is malformed");
}
