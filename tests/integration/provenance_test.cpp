// `lazyagent-oci verify`: a fresh record matches; an edited stored patch,
// policy or verdict is caught and named; an unknown run is exit 2.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

void spill(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::vector<std::string> parts(const json& verdict) {
  std::vector<std::string> out;
  for (const auto& m : verdict["mismatches"]) out.push_back(m["part"]);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_CASE("verify: a fresh record matches, and edits to the stored patch, the policy and the verdict are named",
          "[provenance]") {
  TempDir state, dir;
  const std::string p = dir.file("patch.json", fixing_patch());
  CliResult run = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const json result = json::parse(run.out);
  const std::string id = result["run_id"];
  const std::string store = state.path() + "/lazyagent-oci";
  const std::string record_path = store + "/runs/" + id + ".json";
  const std::string patch_path = store + "/artifacts/" + id + ".patch.json";

  // The record links the planner task, patch, seed, image, runtime, policy and verdict.
  const json rec = json::parse(read_file(record_path));
  const json& pv = rec["provenance"];
  CHECK(pv["patch_sha256"] == result["patch_sha256"]);
  CHECK(pv["seed_sha256"] == result["seed_sha256"]);
  CHECK(pv["image_digest"] == result["image_digest"]);
  CHECK(pv["runtime"] == "runc");
  CHECK(pv["planner_task_id"] == "");
  CHECK(pv["verdict"]["status"] == "passed");
  CHECK(rec["policy"] == result["policy"]);

  CliResult fresh = run_cli({state.path()}, {"verify", id, "--json"});
  INFO(fresh.out << fresh.err);
  CHECK(fresh.exit_code == 0);
  CHECK(json::parse(fresh.out)["matches"] == true);
  CliResult human = run_cli({state.path()}, {"verify", id});
  CHECK(human.exit_code == 0);
  CHECK(human.out.rfind("run " + id + ": MATCHES\n", 0) == 0);

  const std::string original_patch = read_file(patch_path);
  const std::string original_record = read_file(record_path);

  SECTION("the stored patch") {
    std::string edited = original_patch;
    edited.replace(edited.find("a + b"), 5, "a - b");
    spill(patch_path, edited);
    CliResult v = run_cli({state.path()}, {"verify", id, "--json"});
    CHECK(v.exit_code == 1);
    CHECK(parts(json::parse(v.out)) == std::vector<std::string>{"patch"});
  }
  SECTION("the policy") {
    json r = json::parse(original_record);
    r["policy"]["memory_bytes"] = 64LL << 30;
    spill(record_path, r.dump(2));
    CliResult v = run_cli({state.path()}, {"verify", id, "--json"});
    CHECK(v.exit_code == 1);
    CHECK(has(parts(json::parse(v.out)), "policy"));
    CHECK_FALSE(has(parts(json::parse(v.out)), "verdict"));
  }
  SECTION("the verdict") {
    json r = json::parse(original_record);
    r["status"] = "failed";
    r["tests_passed"] = false;
    spill(record_path, r.dump(2));
    CliResult v = run_cli({state.path()}, {"verify", id});
    CHECK(v.exit_code == 1);
    CHECK(v.out.find(": DOES NOT MATCH\n") != std::string::npos);
    CHECK(v.out.find("  verdict: the record's verdict ") != std::string::npos);
  }
  SECTION("all three at once, each named") {
    std::string edited = original_patch;
    edited.replace(edited.find("a + b"), 5, "a - b");
    spill(patch_path, edited);
    json r = json::parse(original_record);
    r["policy"]["network"] = "bridge";
    r["tests_passed"] = false;
    spill(record_path, r.dump(2));
    CliResult v = run_cli({state.path()}, {"verify", id, "--json"});
    CHECK(v.exit_code == 1);
    const auto named = parts(json::parse(v.out));
    CHECK(has(named, "patch"));
    CHECK(has(named, "policy"));
    CHECK(has(named, "verdict"));
  }
}

TEST_CASE("verify: an unknown run id is exit 2", "[provenance][quick]") {
  TempDir state;
  CliResult v = run_cli({state.path()}, {"verify", "r-20000101-000000-000000", "--json"});
  CHECK(v.exit_code == 2);
  CHECK(json::parse(v.out)["error"] == "verify: no run 'r-20000101-000000-000000' in " + state.path() +
                                           "/lazyagent-oci/runs");
  CHECK(run_cli({state.path()}, {"verify", "../../etc/passwd"}).exit_code == 2);
}
