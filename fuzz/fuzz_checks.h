// Invariant checks shared by the fuzz targets (fuzz/*_fuzzer.cpp).
//
// A target does not only wait for a sanitizer to fire: it checks what the
// code promises about its output. A broken promise prints what was expected
// and aborts, which libFuzzer records as a crash and keeps the input.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "contract/change_set.h"
#include "contract/diff_apply.h"
#include "contract/diff_contract.h"
#include "contract/diff_write.h"
#include "contract/patch_contract.h"
#include "contract/patch_format.h"
#include "util/utf8.h"

#define FUZZ_CHECK(cond, what)                                                         \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "invariant broken at %s:%d: %s\n  (%s)\n", __FILE__, __LINE__, \
                   std::string(what).c_str(), #cond);                                  \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace lazyagent::fuzz {

// Valid UTF-8 with no C0 control (except '\n' and '\t' when allowed), no DEL,
// no C1 and no bidi/zero-width format control: safe to show on a terminal.
inline bool is_terminal_safe(std::string_view s, bool allow_newline_tab) {
  for (std::size_t i = 0, len = 1; i < s.size(); i += len) {
    const long cp = decode_utf8(s, i, len);
    if (cp < 0) return false;
    if (allow_newline_tab && (cp == '\n' || cp == '\t')) continue;
    if (is_control_char(cp) || is_format_control(cp)) return false;
  }
  return true;
}

// Everything an accepted patch promises (ARCHITECTURE invariant 6).
inline void check_accepted_patch(const Patch& patch, const ContractLimits& limits) {
  const std::size_t max_files = std::min(limits.max_files, kMaxPatchFilesCap);
  const std::size_t max_bytes = std::min(limits.max_bytes, kMaxPatchBytesCap);
  FUZZ_CHECK(!patch.files.empty() && patch.files.size() <= max_files, "file count within limits");
  std::size_t total = 0;
  std::set<std::string> seen;
  const std::filesystem::path root("/sandbox/work");
  for (const PatchFile& f : patch.files) {
    const std::string& p = f.path;
    FUZZ_CHECK(!p.empty() && p.front() != '/', "accepted path is relative: " + p);
    FUZZ_CHECK(p.find('\\') == std::string::npos, "accepted path has no backslash");
    FUZZ_CHECK(is_valid_utf8(p), "accepted path is valid UTF-8");
    for (std::size_t i = 0, len = 1; i < p.size(); i += len)
      FUZZ_CHECK(!is_control_char(decode_utf8(p, i, len)), "accepted path has no control character");
    // No component is empty, "." or "..", so joined to a root the path stays
    // strictly under it whatever normalisation a consumer applies.
    std::size_t start = 0;
    for (;;) {
      const std::size_t end = std::min(p.find('/', start), p.size());
      const std::string_view part = std::string_view(p).substr(start, end - start);
      FUZZ_CHECK(!part.empty() && part != "." && part != "..", "accepted path component: " + p);
      if (end == p.size()) break;
      start = end + 1;
    }
    const std::string joined = (root / p).lexically_normal().string();
    FUZZ_CHECK(joined.rfind("/sandbox/work/", 0) == 0 && joined.size() > root.string().size() + 1,
               "accepted path stays under the root: " + joined);
    FUZZ_CHECK(joined == root.string() + "/" + p, "accepted path is already normal: " + joined);
    FUZZ_CHECK(path_on_allowlist(p, limits.allow), "accepted path is on the allowlist");
    FUZZ_CHECK(seen.insert(p).second, "accepted patch has no duplicate path");
    FUZZ_CHECK(is_valid_utf8(f.content), "accepted content is valid UTF-8");
    for (std::size_t i = 0, len = 1; i < f.content.size(); i += len) {
      const long cp = decode_utf8(f.content, i, len);
      FUZZ_CHECK(cp == '\t' || cp == '\n' || cp == '\r' || !is_control_char(cp),
                 "accepted content has no control character but tab, CR, LF");
      // Trojan Source: no bidi control at all; no invisible character but a
      // leading BOM and joiners (which the contract allows only inside text).
      FUZZ_CHECK(!is_bidi_control(cp), "accepted content has no bidirectional control");
      FUZZ_CHECK(cp != 0x200b && cp != 0x200e && cp != 0x200f && cp != 0x061c && cp != 0x2028 &&
                     cp != 0x2029 && !(cp >= 0x2060 && cp <= 0x2064) && (cp != 0xfeff || i == 0),
                 "accepted content has no invisible character");
    }
    for (std::size_t i = 0, len = 1; i < p.size(); i += len) {
      const long cp = decode_utf8(p, i, len);
      FUZZ_CHECK(!is_format_control(cp) && cp != 0x2028 && cp != 0x2029, "accepted path has no format character");
    }
    total += f.content.size();
  }
  FUZZ_CHECK(total <= max_bytes, "content bytes within limits");
}

// What every finding promises: a known reason code, and a message and path
// safe to print (one line, no raw control bytes).
inline void check_finding(const Finding& f) {
  static const std::set<std::string> codes = {
      reason::kMalformedJson, reason::kBadShape,       reason::kNoFiles,
      reason::kInvalidUtf8,   reason::kEmptyPath,      reason::kAbsolutePath,
      reason::kDotComponent,  reason::kBackslashInPath, reason::kControlCharInPath,
      reason::kControlCharInContent, reason::kDuplicatePath, reason::kNotAllowed,
      diff_reason::kEmptyDiff, diff_reason::kMalformedDiff, diff_reason::kRename, diff_reason::kCopy,
      diff_reason::kBinary, diff_reason::kSymlink, diff_reason::kSubmodule, diff_reason::kUnsupportedMode,
      diff_reason::kDiffTooLarge, diff_reason::kTooManyChangedLines, diff_reason::kHunkDoesNotApply,
      diff_reason::kHunkNeedsFuzz,
      reason::kTooManyFiles,  reason::kTooLarge,       reason::kBidiControlInPath,
      reason::kInvisibleCharInPath, reason::kBidiControlInContent, reason::kInvisibleCharInContent,
      reason::kSuspiciousExit, reason::kSuspiciousAtexit, reason::kSuspiciousSignal,
      reason::kSuspiciousRunnerSummary};
  FUZZ_CHECK(codes.count(f.code) == 1, "known reason code: " + f.code);
  FUZZ_CHECK(!f.message.empty(), "finding has a message");
  FUZZ_CHECK(is_terminal_safe(f.message, false), "finding message is safe to print: " + f.message);
  FUZZ_CHECK(is_terminal_safe(f.path, false), "finding path is safe to print");
}

// Validate, check every promise, and check that an accepted patch survives
// serialisation unchanged (the orchestrator re-validates patch_to_json output).
inline ContractResult validate_and_check(std::string_view text, const ContractLimits& limits) {
  ContractResult r = validate_patch_json(text, limits);
  for (const Finding& f : r.findings) check_finding(f);
  for (const Finding& f : r.suspicious) {
    check_finding(f);
    FUZZ_CHECK(f.code.rfind("suspicious_", 0) == 0 && f.line > 0, "a suspicious finding names its line");
  }
  // Refusing suspicious code adds exactly the suspicious findings as refusals.
  ContractLimits strict = limits;
  strict.refuse_suspicious = true;
  const ContractResult rs = validate_patch_json(text, strict);
  FUZZ_CHECK(rs.findings.size() == r.findings.size() + r.suspicious.size(),
             "refuse_suspicious refuses exactly the suspicious findings");
  if (!r.ok()) return r;
  check_accepted_patch(r.patch, limits);
  FUZZ_CHECK(validate_patch(r.patch, limits).empty(), "validate_patch agrees with validate_patch_json");
  const std::string again = patch_to_json(r.patch);
  const ContractResult r2 = validate_patch_json(again, limits);
  FUZZ_CHECK(r2.ok(), "patch_to_json output is accepted again");
  FUZZ_CHECK(r2.patch.files.size() == r.patch.files.size(), "round trip keeps the file count");
  for (std::size_t i = 0; i < r.patch.files.size(); ++i) {
    FUZZ_CHECK(r2.patch.files[i].path == r.patch.files[i].path, "round trip keeps paths");
    FUZZ_CHECK(r2.patch.files[i].content == r.patch.files[i].content, "round trip keeps content");
  }
  FUZZ_CHECK(patch_to_json(r2.patch) == again, "patch_to_json is stable");
  return r;
}

// A diff read and judged: every finding known and printable; an accepted
// diff names only relative, normal, allowed paths, no rename, copy, binary,
// symlink or submodule, within the limits; and where it applies to the
// fuzzer's fixed files, the change written back as a diff (diff_write.h)
// reads, passes the contract and applies to the same result.
inline void check_diff_text(std::string_view text, const ContractLimits& limits) {
  const DiffContractResult r = validate_diff_text(text, limits);
  for (const Finding& f : r.findings) check_finding(f);
  if (!r.ok()) return;
  const ContractLimits caps = clamp_to_caps(limits);
  FUZZ_CHECK(r.stats.files <= caps.max_files, "accepted diff: file count within limits");
  FUZZ_CHECK(r.stats.added + r.stats.removed <= caps.max_changed_lines, "accepted diff: changed lines within limits");
  FUZZ_CHECK(r.stats.added_bytes <= caps.max_bytes, "accepted diff: added bytes within limits");
  const std::filesystem::path root("/sandbox/work");
  std::set<std::string> seen;
  for (const FileDiff& f : r.diff.files) {
    for (const std::string* p : {&f.path, &f.old_path, &f.new_path}) {
      if (p->empty()) continue;
      FUZZ_CHECK(check_patch_path(*p).empty(), "accepted diff path passes the path rules: " + *p);
      const std::string norm = (root / *p).lexically_normal().string();
      FUZZ_CHECK(norm.rfind("/sandbox/work/", 0) == 0, "accepted diff path stays under the root: " + *p);
    }
    FUZZ_CHECK(path_on_allowlist(f.path, limits.allow), "accepted diff path is allowed: " + f.path);
    FUZZ_CHECK(seen.insert(f.path).second, "accepted diff paths are unique");
    FUZZ_CHECK(!f.rename && !f.copy && !f.binary, "accepted diff has no rename, copy or binary");
    for (const unsigned m : {f.old_mode, f.new_mode}) {
      FUZZ_CHECK(m == 0 || m == kModeFile || m == kModeExecutable, "accepted diff mode is a file's");
    }
    // Apply to a fixed file (or nothing, for a new one) and round-trip.
    const std::string old = f.op == FileOp::kCreate ? "" : "def add(a, b):\n    return a - b\n\n\nx = 1\n";
    const FileApplyResult a = apply_file_diff(f, old);
    for (const Finding& x : a.findings) check_finding(x);
    if (!a.ok()) continue;
    const TextChange c{f.path, f.op, old, f.op == FileOp::kDelete ? "" : a.content, 0100644, 0100644};
    const std::string written = write_unified_diff({c});
    if (written.empty()) {
      FUZZ_CHECK(old == a.content || f.op != FileOp::kModify, "an empty written diff means no change");
      continue;
    }
    ContractLimits wide = limits;
    wide.max_files = kMaxPatchFilesCap;
    wide.max_bytes = kMaxPatchBytesCap;
    wide.max_diff_bytes = kMaxDiffBytesCap;
    wide.max_changed_lines = kMaxChangedLinesCap;
    const DiffContractResult again = validate_diff_text(written, wide);
    FUZZ_CHECK(again.ok(), "the written diff passes the contract: " + (again.ok() ? "" : again.findings[0].message));
    FUZZ_CHECK(again.diff.files.size() == 1, "the written diff has one section");
    const FileApplyResult b = apply_file_diff(again.diff.files[0], old);
    FUZZ_CHECK(b.ok(), "the written diff applies: " + (b.ok() ? "" : b.findings[0].message));
    FUZZ_CHECK(b.content == a.content, "the written diff gives the same file");
  }
}

}  // namespace lazyagent::fuzz
