// Provenance of a run: one record links what was proven, where, under which
// policy, with which verdict, by content hashes that `lazyagent-oci verify`
// recomputes from what the run store keeps.
//
// On disk (run_store.h layout), per run:
//   runs/<id>.json                       the record; its "provenance" object:
//     version            1
//     planner_task_id    "" for `test`
//     patch_sha256       sha256 of the stored patch (the validated patch in
//                        canonical form, patch_to_json)
//     seed_sha256        the seed snapshot's hash, recomputable from the manifest
//     image_digest       the sandbox image's digest
//     runtime            the OCI runtime (runc, runsc)
//     policy_sha256      sha256 of the record's "policy" (the effective policy,
//                        its content; canonical JSON: sorted keys, no spaces)
//     verdict            {status, tests_passed, test_exit_code, reason}
//     verdict_sha256     sha256 of that verdict
//     result_sha256      sha256 of the whole record without "provenance"
//     provenance_sha256  sha256 of this object without provenance_sha256
//   artifacts/<id>.patch.json            the stored patch (whole files), or
//   artifacts/<id>.patch.diff            the stored patch (a unified diff, as it came)
//   artifacts/<id>.diff                  the proven change as a unified diff against the
//                                        seed snapshot (change_set.h); the record's
//                                        diff_sha256 is its hash (records since diffs)
//   artifacts/<id>.seed-manifest.json    [{kind, mode, path, sha256}] per seed entry
// The manifest, not the seed's bytes, is kept: the seed hash is a hash over
// exactly these fields, so it can be recomputed without keeping the seed.
//
// What this proves: a record, patch, policy or verdict edited after the run
// no longer matches (each mismatch is named). What it cannot prove: that a
// writer who recomputes every hash did not forge the whole record; there is
// no signing key. Pure, apart from nothing: documents in, findings out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

inline constexpr int kProvenanceVersion = 1;
inline constexpr const char* kArtifactsDir = "artifacts";

// "<id>.patch.json", or "<id>.patch.diff" for format "diff".
std::string patch_artifact_name(const std::string& run_id, const std::string& format = "files");
std::string diff_artifact_name(const std::string& run_id);           // "<id>.diff"
std::string seed_manifest_artifact_name(const std::string& run_id);  // "<id>.seed-manifest.json"

// sha256 hex of j.dump() (sorted keys, no whitespace).
std::string canonical_sha256(const nlohmann::json& j);

// The seed snapshot's manifest, and its hash recomputed from the manifest
// alone (equal to SeedSnapshot::sha256 for the snapshot it came from).
nlohmann::json seed_manifest(const SeedSnapshot& seed);
Result<std::string> seed_sha256_from_manifest(const nlohmann::json& manifest);

// The verdict fields of a record.
nlohmann::json verdict_of(const nlohmann::json& record);

// The "provenance" object for a record (which must not yet hold one, or
// holds one that is ignored).
nlohmann::json build_provenance(const nlohmann::json& record);

struct ProvenanceMismatch {
  std::string part;    // provenance, patch, diff, seed, policy, runtime, verdict, image, planner_task, result
  std::string detail;  // one sentence: what differs
};

// What the run store holds for one run besides its record.
struct StoredArtifacts {
  std::optional<std::string> patch;           // absent: file missing
  std::optional<nlohmann::json> seed_manifest;
  std::optional<std::string> diff;            // the canonical diff, when the record names one
  std::string patch_problem;                  // why absent/unreadable, for the message
  std::string manifest_problem;
  std::string diff_problem;
};

// Every way the record no longer matches its provenance and the stored
// artifacts; empty = matches.
std::vector<ProvenanceMismatch> check_provenance(const nlohmann::json& record, const StoredArtifacts& stored);

}  // namespace lazyagent
