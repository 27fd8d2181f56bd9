#include "store/provenance.h"

#include "util/digest.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::string kind_name(SeedEntry::Kind k) {
  return k == SeedEntry::Kind::kDir ? "d" : k == SeedEntry::Kind::kFile ? "f" : "l";
}

std::string str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::string or_none(const std::string& s) { return s.empty() ? "(none)" : s; }

json without(json j, const char* key) {
  if (j.is_object()) j.erase(key);
  return j;
}

}  // namespace

std::string patch_artifact_name(const std::string& run_id, const std::string& format) {
  return run_id + (format == "diff" ? ".patch.diff" : ".patch.json");
}
std::string diff_artifact_name(const std::string& run_id) { return run_id + ".diff"; }
std::string seed_manifest_artifact_name(const std::string& run_id) { return run_id + ".seed-manifest.json"; }

std::string canonical_sha256(const json& j) {
  return sha256_hex(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

json seed_manifest(const SeedSnapshot& seed) {
  json m = json::array();
  for (const auto& e : seed.entries) {
    m.push_back({{"kind", kind_name(e.kind)}, {"mode", e.mode}, {"path", e.path}, {"sha256", e.sha256.empty() ? sha256_hex(e.data) : e.sha256}});
  }
  return m;
}

Result<std::string> seed_sha256_from_manifest(const json& manifest) {
  // The same canonical text seed_snapshot.cpp hashes: per entry
  // "<kind> <mode> <path>\0<sha256 of content>\n", in path order.
  if (!manifest.is_array()) return engine_error("the seed manifest is not a list");
  std::string canon;
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    const json& e = manifest[i];
    const std::string kind = str(e, "kind"), path = str(e, "path"), sha = str(e, "sha256");
    if ((kind != "d" && kind != "f" && kind != "l") || path.empty() || sha.size() != 64 ||
        !e.contains("mode") || !e["mode"].is_number_integer() || e["mode"].get<std::int64_t>() < 0) {
      return engine_error("seed manifest entry " + std::to_string(i) + " is malformed");
    }
    canon += kind + ' ' + std::to_string(e["mode"].get<unsigned>()) + ' ' + path + '\0' + sha + '\n';
  }
  return sha256_hex(canon);
}

json verdict_of(const json& record) {
  return json{{"status", record.value("status", "")},
              {"tests_passed", record.value("tests_passed", false)},
              {"test_exit_code", record.value("test_exit_code", -1)},
              {"reason", record.value("reason", "")}};
}

namespace {

// The record's effective policy; a record written before the policy is known
// (a planning record) has none, or null: an empty object then.
json policy_of(const json& rec) {
  const auto it = rec.find("policy");
  return it != rec.end() && it->is_object() ? *it : json::object();
}

}  // namespace

json build_provenance(const json& record) {
  const json rec = without(record, "provenance");
  const json policy = policy_of(rec);
  const json verdict = verdict_of(rec);
  json p = {
      {"version", kProvenanceVersion},
      {"planner_task_id", rec.value("planner_task_id", "")},
      {"patch_sha256", rec.value("patch_sha256", "")},
      {"seed_sha256", rec.value("seed_sha256", "")},
      {"image_digest", rec.value("image_digest", "")},
      {"runtime", policy.value("runtime", "runc")},
      {"policy_sha256", canonical_sha256(policy)},
      {"verdict", verdict},
      {"verdict_sha256", canonical_sha256(verdict)},
      {"result_sha256", canonical_sha256(rec)},
  };
  p["provenance_sha256"] = canonical_sha256(p);
  return p;
}

std::vector<ProvenanceMismatch> check_provenance(const json& record, const StoredArtifacts& stored) {
  std::vector<ProvenanceMismatch> out;
  auto fail = [&](const char* part, std::string detail) { out.push_back({part, std::move(detail)}); };
  if (!record.is_object() || !record.contains("provenance") || !record["provenance"].is_object()) {
    fail("provenance", "the record has no provenance (written before provenance existed, or removed)");
    return out;
  }
  const json& p = record["provenance"];
  if (canonical_sha256(without(p, "provenance_sha256")) != str(p, "provenance_sha256")) {
    fail("provenance", "the provenance object was changed after it was written");
  }
  const json rec = without(record, "provenance");

  // The patch: the stored bytes against the recorded hash.
  const std::string patch_sha = str(p, "patch_sha256");
  if (str(rec, "patch_sha256") != patch_sha) {
    fail("patch", "the record's patch_sha256 " + or_none(str(rec, "patch_sha256")) + " differs from provenance's " + or_none(patch_sha));
  }
  if (!patch_sha.empty()) {
    if (!stored.patch) {
      fail("patch", "the stored patch is missing: " + stored.patch_problem);
    } else if (const std::string got = sha256_hex(*stored.patch); got != patch_sha) {
      fail("patch", "the stored patch hashes to " + got + ", the record says " + patch_sha);
    }
  }

  // The proven change as a diff (records since diffs carry diff_sha256).
  if (const std::string diff_sha = str(rec, "diff_sha256"); !diff_sha.empty()) {
    if (!stored.diff) {
      fail("diff", "the stored diff is missing: " + stored.diff_problem);
    } else if (const std::string got = sha256_hex(*stored.diff); got != diff_sha) {
      fail("diff", "the stored diff hashes to " + got + ", the record says " + diff_sha);
    }
  }

  // The seed: recomputed from the stored manifest.
  const std::string seed_sha = str(p, "seed_sha256");
  if (str(rec, "seed_sha256") != seed_sha) {
    fail("seed", "the record's seed_sha256 " + or_none(str(rec, "seed_sha256")) + " differs from provenance's " + or_none(seed_sha));
  }
  if (!seed_sha.empty()) {
    if (!stored.seed_manifest) {
      fail("seed", "the stored seed manifest is missing: " + stored.manifest_problem);
    } else if (auto got = seed_sha256_from_manifest(*stored.seed_manifest); !got) {
      fail("seed", got.error().message);
    } else if (*got != seed_sha) {
      fail("seed", "the stored seed manifest hashes to " + *got + ", the record says " + seed_sha);
    }
  }

  // The effective policy, and the runtime it names.
  const json policy = policy_of(rec);
  if (const std::string got = canonical_sha256(policy); got != str(p, "policy_sha256")) {
    fail("policy", "the stored policy hashes to " + got + ", the record says " + or_none(str(p, "policy_sha256")));
  }
  if (policy.value("runtime", "runc") != str(p, "runtime")) {
    fail("runtime", "the policy names runtime " + policy.value("runtime", std::string("runc")) + ", provenance " +
                        or_none(str(p, "runtime")));
  }

  // The verdict.
  const json verdict = verdict_of(rec);
  if (verdict != p.value("verdict", json())) {
    fail("verdict", "the record's verdict " + verdict.dump() + " differs from the one recorded " +
                        p.value("verdict", json()).dump());
  } else if (canonical_sha256(verdict) != str(p, "verdict_sha256")) {
    fail("verdict", "the recorded verdict does not hash to verdict_sha256");
  }

  if (str(rec, "image_digest") != str(p, "image_digest")) {
    fail("image", "the record's image digest " + or_none(str(rec, "image_digest")) + " differs from provenance's " +
                      or_none(str(p, "image_digest")));
  }
  if (str(rec, "planner_task_id") != str(p, "planner_task_id")) {
    fail("planner_task", "the record's planner task " + or_none(str(rec, "planner_task_id")) + " differs from provenance's " +
                             or_none(str(p, "planner_task_id")));
  }
  if (canonical_sha256(rec) != str(p, "result_sha256")) {
    fail("result", "the record's content does not hash to result_sha256 (some field was changed)");
  }
  return out;
}

}  // namespace lazyagent
