// The patch contract: the only shape of change the model may propose.
//
//   {"files":[{"path":"calculator.py","content":"<complete UTF-8 file>"}]}
//
// The patch is untrusted input (it comes from a model, through the planner
// container). It is validated twice with this same code: once inside the
// planner, once by the orchestrator before anything reaches a sandbox
// (ARCHITECTURE invariant 6). Validation reports *every* finding, each with a
// stable reason code (part of the public contract: scripts match on them) and
// the offending path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"

namespace lazyagent {

// Limits. The defaults are the origin guide's contract (whole files, 3 files,
// 12,000 bytes), what the demo needs; real projects raise them in the config
// (`patch.*`) up to the hard caps, which bound what one patch may cost to
// read, check and apply. The caps are stated in the README.
inline constexpr std::size_t kDefaultPatchFiles = 3;
inline constexpr std::size_t kDefaultPatchBytes = 12000;
inline constexpr std::size_t kDefaultDiffBytes = 12000;
inline constexpr std::size_t kDefaultChangedLines = 1000;
// The hard caps (kMax*Cap) are in config.h, which checks `patch.*` against them.

struct PatchFile {
  std::string path;
  std::string content;
  // The file line each line of `content` is (a diff's added lines,
  // diff_contract.h), for findings' line numbers; empty: 1, 2, 3, ...
  std::vector<std::size_t> lines = {};
};

struct Patch {
  std::vector<PatchFile> files;
};

struct ContractLimits {
  std::size_t max_files = kDefaultPatchFiles;          // files a patch changes (patch.max_files)
  std::size_t max_bytes = kDefaultPatchBytes;          // content the model wrote: whole files' content,
                                                       // a diff's added lines (patch.max_bytes)
  std::size_t max_diff_bytes = kDefaultDiffBytes;      // a unified diff's text (patch.max_diff_bytes)
  std::size_t max_changed_lines = kDefaultChangedLines;  // a diff's added + removed lines
  // Exact relative paths; an entry ending in '/' allows any path under it.
  std::vector<std::string> allow;
  // Refuse patches with suspicious findings (config patch.suspicious: refuse)
  // instead of only reporting them.
  bool refuse_suspicious = false;
};

// The patch contract's limits from the config (allow, patch.*): what both
// validations of a patch use (the planner gets them in its task).
ContractLimits contract_limits(const Config& config);

// Stable reason codes.
namespace reason {
inline constexpr const char* kMalformedJson = "malformed_json";
// Text that is neither JSON nor a unified diff (patch_format.h).
inline constexpr const char* kUnknownFormat = "unknown_format";
inline constexpr const char* kBadShape = "bad_shape";
inline constexpr const char* kNoFiles = "no_files";
inline constexpr const char* kInvalidUtf8 = "invalid_utf8";
inline constexpr const char* kEmptyPath = "empty_path";
inline constexpr const char* kAbsolutePath = "absolute_path";
inline constexpr const char* kDotComponent = "dot_component";      // "." or ".." or empty ("a//b")
inline constexpr const char* kBackslashInPath = "backslash_in_path";
inline constexpr const char* kControlCharInPath = "control_char_in_path";
inline constexpr const char* kControlCharInContent = "control_char_in_content";
inline constexpr const char* kDuplicatePath = "duplicate_path";
inline constexpr const char* kNotAllowed = "not_allowed";
inline constexpr const char* kTooManyFiles = "too_many_files";
inline constexpr const char* kTooLarge = "too_large";
// Text that reads differently from what runs (docs: README "The patch format").
inline constexpr const char* kBidiControlInPath = "bidi_control_in_path";
inline constexpr const char* kInvisibleCharInPath = "invisible_char_in_path";
inline constexpr const char* kBidiControlInContent = "bidi_control_in_content";
inline constexpr const char* kInvisibleCharInContent = "invisible_char_in_content";
// Code a forged test report needs (suspicious_code.h): reported in a result's
// `suspicious`, and refusals only with ContractLimits::refuse_suspicious.
inline constexpr const char* kSuspiciousExit = "suspicious_exit";
inline constexpr const char* kSuspiciousAtexit = "suspicious_atexit";
inline constexpr const char* kSuspiciousSignal = "suspicious_signal";
inline constexpr const char* kSuspiciousRunnerSummary = "suspicious_runner_summary";
}  // namespace reason

struct Finding {
  std::string code;     // one of reason::k*
  std::string path;     // offending patch path ("" when the finding is about the whole patch)
  std::string message;  // one human sentence, safe to print (no raw control bytes)
  std::size_t line = 0; // 1-based line of the content it is about (the first one); 0 = none
};

struct ContractResult {
  Patch patch;                    // what could be parsed (may be partial when findings exist)
  std::vector<Finding> findings;  // empty means accepted
  // suspicious_* findings (suspicious_code.h) over the parsed files; with
  // refuse_suspicious they are in `findings` too.
  std::vector<Finding> suspicious;
  bool ok() const { return findings.empty(); }
};

// Parse JSON text and validate it. Never throws.
ContractResult validate_patch_json(std::string_view json_text, const ContractLimits& limits);

// Validate an already-parsed patch (used after parsing and by tests).
std::vector<Finding> validate_patch(const Patch& patch, const ContractLimits& limits);

// The limits clamped to the hard caps (a limit above its cap counts as the cap).
ContractLimits clamp_to_caps(const ContractLimits& limits);

// " (patch.max_files in the config, which can be raised up to 1000)": the tail
// of every cap refusal, naming the key and how far it goes.
std::string cap_hint(const char* key, std::size_t hard_cap);

// The largest patch text (JSON or diff) read for these limits: JSON escapes
// can make content up to 6 times longer. Bigger input is refused unread.
std::size_t max_patch_text_bytes(const ContractLimits& limits);

// The path rules alone, in rule order: empty_path, invalid_utf8, absolute_path,
// dot_component, backslash_in_path, control_char_in_path, bidi_control_in_path,
// invisible_char_in_path. Config checks its
// `allow` entries with these, so an allowlist can never name a path the
// contract would refuse. Empty when `path` is a valid relative patch path.
std::vector<Finding> check_patch_path(std::string_view path);

// The allowlist rule: an exact match, or under an entry that ends in '/'.
bool path_on_allowlist(std::string_view path, const std::vector<std::string>& allow);

// A path (or any untrusted name) as findings show it: one line, every
// control, format control and invalid byte escaped, cut at 256 bytes.
std::string display_path(std::string_view path);

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Text from a patch as the contract shows it in messages: one line, C0/DEL
// and invalid bytes as \xNN, C1, format controls and line separators as
// \u{NN}, '\' doubled, cut at 256 bytes with "...".
std::string contract_display(std::string_view s);

// Findings as result JSON: [{code, path, message[, line]}] ("line" when known),
// and back (entries that are not objects are skipped; missing fields empty).
nlohmann::json findings_to_json(const std::vector<Finding>& findings);
std::vector<Finding> findings_from_json(const nlohmann::json& j);

// Serialize a patch back to contract JSON (stable key order).
std::string patch_to_json(const Patch& patch);

// sha256 hex of patch_to_json(patch): the patch's identity in records.
std::string patch_sha256(const Patch& patch);

}  // namespace lazyagent
