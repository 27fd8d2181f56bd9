// The proven change out: `lazyagent-oci diff RUN_ID` and `apply RUN_ID`.
//
// A run record names the change it proved as one unified diff against the
// seed snapshot (artifacts/<id>.diff, its hash in the record's diff_sha256;
// change_set.h), whatever form the patch came in. `diff` prints it after
// checking that hash. `apply` writes the change into the user's work tree:
//   1. the record must be a run whose tests passed (`--force` takes any
//      finished run), and its provenance must still match (provenance.h):
//      nothing proven is applied from an edited record;
//   2. the tree (the seed the record names, or --seed) is read with the same
//      seed source settings the run used, and must match the stored seed
//      manifest entry for entry, or apply refuses and names every file that
//      differs (changed, missing, new);
//   3. the diff is read and applied (diff_apply.h) to the tree's files; each
//      result must hash to the after_sha256 the record keeps, then is written
//      (temp file + rename; deleted files unlinked; modes set);
//   4. with --branch NAME (a git work tree only; an existing branch name is
//      refused): as `git branch NAME`, the branch is created beside the
//      checkout with one commit holding the change over HEAD, and HEAD, the
//      index and the work tree are left as they are (branch_commit.h; `git
//      switch NAME` takes it). With --switch too, the branch is created and
//      switched to before anything is written, the files are written and
//      the changed paths committed there (the user's hooks run). The
//      message names the run id, its verdict and the patch and diff hashes;
//      the user's git config and identity apply (lazyagent-oci@localhost
//      when no identity).
// Records from before diffs were stored have no diff artifact: `diff` then
// rebuilds it from the stored whole-file patch and the seed directory, if
// the seed's files the patch touches still match the manifest.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/provenance.h"
#include "util/result.h"
#include "store/run_store.h"

namespace lazyagent {

// What the run store keeps for a run besides its record.
StoredArtifacts load_stored_artifacts(const RunStore& store, const std::string& run_id, const nlohmann::json& record);

struct ProvenChange {
  nlohmann::json record;
  std::string diff;       // the proven change, unified diff against the seed snapshot
  bool rebuilt = false;   // rebuilt from an older record's patch and the seed
};

// The run's proven diff (checked against diff_sha256). kUsage for an unknown
// run or one without a patch.
Result<ProvenChange> load_proven_change(const RunStore& store, const std::string& run_id);

struct ApplyRequest {
  std::string run_id;
  std::string seed;    // "" = the record's
  std::string branch;  // "" = no branch, no commit
  bool switch_branch = false;  // --switch: switch to the branch and write the work tree
  bool force = false;  // apply a run that did not pass
};

struct ApplyOutcome {
  std::string seed;
  std::vector<std::string> applied;  // paths written or deleted
  std::string branch;
  std::string commit;                // the new commit's id
  bool switched = false;             // the checkout is on `branch` (--switch)
};

// Refusals are kPatch errors whose message names what differs (exit 1 in
// the CLI); unknown runs kUsage; git failures kEngine.
Result<ApplyOutcome> apply_proven_change(const RunStore& store, const ApplyRequest& req);

// The differences between a stored seed manifest and a tree's manifest,
// one line each: "changed: x.py", "missing: y.py", "new: z.py" (pure).
std::vector<std::string> manifest_differences(const nlohmann::json& proven, const nlohmann::json& now);

}  // namespace lazyagent
