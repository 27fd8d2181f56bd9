// Patch formats: a patch arrives as the JSON whole-file form
//   {"files":[{"path":"calculator.py","content":"<complete file>"}]}
// or as a unified diff (`git diff`, `diff -u`, unified_diff.h), from
// `--patch FILE`, the planner's reply or an eval task. The form is told from
// the content alone: text whose first non-blank character is '{' is JSON;
// text with a diff header (`diff --git`, `---` + `+++`, `@@ -`) or no text at
// all (an empty diff) is a diff; anything else is judged as JSON: refused as
// malformed_json when it is broken JSON, as unknown_format when it is no JSON
// at all. Each form meets its contract (patch_contract.h,
// diff_contract.h) with the same limits. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "contract/diff_contract.h"
#include "contract/patch_contract.h"
#include "contract/unified_diff.h"

namespace lazyagent {

enum class PatchFormat { kFiles, kDiff };

const char* patch_format_name(PatchFormat f);  // "files", "diff"

PatchFormat detect_patch_format(std::string_view text);

// A patch read and judged without the seed: what the planner checks and the
// orchestrator's validate step checks again.
struct PatchCheck {
  PatchFormat format = PatchFormat::kFiles;
  Patch files;                    // kFiles: the files (may be partial when refused)
  UnifiedDiff diff;               // kDiff: the sections read
  DiffStats stats;                // kDiff: as written
  std::vector<Finding> findings;  // empty = accepted
  // kFiles: suspicious_* findings over the files (suspicious_code.h). A diff's
  // need the lines around the ones it adds: resolve_changes finds them.
  std::vector<Finding> suspicious;
  bool ok() const { return findings.empty(); }
  // The patch as stored and hashed (patch_sha256): the canonical JSON of a
  // whole-file patch, a diff's text as it came; a refused patch's text as it
  // came (a refusal is recorded and verified too).
  std::string stored;
  std::string sha256;
};

PatchCheck check_patch_text(std::string_view text, const ContractLimits& limits);

// A patch's identity in records, whatever its form.
std::string patch_text_sha256(const PatchCheck& check);

}  // namespace lazyagent
