// The diff contract (diff_contract.h). The path and content rules are the
// patch contract's own, run through validate_patch() on a one-file patch per
// section (the path it changes, the text it adds), so a rule added to the
// contract applies to diffs too.
#include "contract/diff_contract.h"

#include <cstdio>
#include <map>
#include <string>

namespace lazyagent {

namespace {

Finding make_finding(const char* code, std::string_view path, std::string message) {
  return Finding{code, path.empty() ? std::string() : display_path(path), std::move(message)};
}

std::string q(std::string_view path) { return "'" + display_path(path) + "'"; }

std::string mode_text(unsigned m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", m);
  return buf;
}

// The text a section adds: a new file's content, a changed file's new lines.
std::string added_text(const FileDiff& f) {
  std::string out;
  for (const auto& h : f.hunks) {
    for (const auto& l : h.lines) {
      if (l.op != '+') continue;
      out += l.text;
      if (l.newline) out += '\n';
    }
  }
  return out;
}

// The line in the new file of each line added_text() holds, from the hunk
// headers (findings then name the file's line, not the added text's).
std::vector<std::size_t> added_lines(const FileDiff& f) {
  std::vector<std::size_t> out;
  for (const auto& h : f.hunks) {
    std::size_t line = h.new_start;
    for (const auto& l : h.lines) {
      if (l.op == '+') out.push_back(line);
      if (l.op != '-') ++line;
    }
  }
  return out;
}

void check_kinds(const FileDiff& f, std::vector<Finding>* out) {
  const std::string where = f.path.empty() ? "a file" : q(f.path);
  if (f.binary) {
    out->push_back(make_finding(diff_reason::kBinary, f.path,
                                "the diff changes " + where + " as binary data (line " + std::to_string(f.line) +
                                    "); binary patches are refused: only text files can be proven and reviewed."));
  }
  if (f.rename) {
    out->push_back(make_finding(diff_reason::kRename, f.path,
                                "the diff renames " + q(f.old_path) + " to " + q(f.new_path) + " (line " +
                                    std::to_string(f.line) +
                                    "); renames are refused: delete the old file and create the new one instead."));
  }
  if (f.copy) {
    out->push_back(make_finding(diff_reason::kCopy, f.path,
                                "the diff copies " + q(f.old_path) + " to " + q(f.new_path) + " (line " +
                                    std::to_string(f.line) + "); copies are refused: create the new file instead."));
  }
  bool symlink = false, gitlink = false, other = false;
  for (const unsigned m : {f.old_mode, f.new_mode}) {
    if (m == 0 || m == kModeFile || m == kModeExecutable) continue;
    if (m == kModeSymlink) symlink = true;
    else if (m == kModeGitlink) gitlink = true;
    else other = true;
  }
  if (symlink) {
    out->push_back(make_finding(diff_reason::kSymlink, f.path,
                                "the diff makes or changes a symbolic link at " + where +
                                    " (mode 120000); symbolic links are refused."));
  }
  if (gitlink) {
    out->push_back(make_finding(diff_reason::kSubmodule, f.path,
                                "the diff changes a submodule at " + where + " (mode 160000); submodules are refused."));
  }
  if (other) {
    out->push_back(make_finding(diff_reason::kUnsupportedMode, f.path,
                                "the diff gives " + where + " mode " + mode_text(f.old_mode) + " -> " +
                                    mode_text(f.new_mode) + "; only 100644 and 100755 are allowed."));
  }
}

}  // namespace

std::vector<Finding> validate_diff(const UnifiedDiff& diff, std::size_t text_bytes, const ContractLimits& limits) {
  const ContractLimits caps = clamp_to_caps(limits);
  std::vector<Finding> out;
  std::map<std::string, std::size_t> seen;
  ContractLimits one = caps;  // the contract's rules for one file; caps are judged below
  one.max_files = kMaxPatchFilesCap;
  one.max_bytes = kMaxPatchBytesCap;
  // Whether code runs at import time depends on the lines around the added
  // ones: the suspicious scan runs on the applied file (resolve_changes).
  one.refuse_suspicious = false;
  for (std::size_t i = 0; i < diff.files.size(); ++i) {
    const FileDiff& f = diff.files[i];
    // The other header's name meets the path rules too (the one changed is
    // checked with the content below).
    for (const std::string* p : {&f.old_path, &f.new_path}) {
      if (p->empty() || *p == f.path) continue;
      for (Finding& x : check_patch_path(*p)) out.push_back(std::move(x));
    }
    const std::size_t before = out.size();
    check_kinds(f, &out);
    if (f.path.empty()) {
      // A binary line outside a section is named by check_kinds; any other
      // section without a path (an empty `+++ ` header, found by fuzzing) is
      // refused here, never passed on with nothing to check.
      if (out.size() == before) {
        for (Finding& x : check_patch_path(f.path)) out.push_back(std::move(x));
      }
      continue;
    }
    const auto [first, fresh] = seen.emplace(f.path, f.line);
    if (!fresh) {
      out.push_back(make_finding(reason::kDuplicatePath, f.path,
                                 "the diff changes " + q(f.path) + " in two sections (lines " +
                                     std::to_string(first->second) + " and " + std::to_string(f.line) + ")."));
    }
    Patch p;
    p.files.push_back({f.path, added_text(f), added_lines(f)});
    for (Finding& x : validate_patch(p, one)) {
      if (x.code == reason::kTooLarge || x.code == reason::kTooManyFiles || x.code == reason::kNoFiles) continue;
      out.push_back(std::move(x));
    }
  }
  const DiffStats s = diff_stats(diff);
  if (s.files > caps.max_files) {
    out.push_back(make_finding(reason::kTooManyFiles, "",
                               "the diff changes " + std::to_string(s.files) + " files; the limit is " +
                                   std::to_string(caps.max_files) + cap_hint("patch.max_files", kMaxPatchFilesCap) +
                                   "."));
  }
  if (text_bytes > caps.max_diff_bytes) {
    out.push_back(make_finding(diff_reason::kDiffTooLarge, "",
                               "the diff is " + std::to_string(text_bytes) + " bytes; the limit is " +
                                   std::to_string(caps.max_diff_bytes) +
                                   cap_hint("patch.max_diff_bytes", kMaxDiffBytesCap) + "."));
  }
  if (s.added + s.removed > caps.max_changed_lines) {
    out.push_back(make_finding(diff_reason::kTooManyChangedLines, "",
                               "the diff changes " + std::to_string(s.added + s.removed) + " lines (" +
                                   std::to_string(s.added) + " added, " + std::to_string(s.removed) +
                                   " removed); the limit is " + std::to_string(caps.max_changed_lines) +
                                   cap_hint("patch.max_changed_lines", kMaxChangedLinesCap) + "."));
  }
  if (s.added_bytes > caps.max_bytes) {
    out.push_back(make_finding(reason::kTooLarge, "",
                               "the diff adds " + std::to_string(s.added_bytes) + " bytes of content; the limit is " +
                                   std::to_string(caps.max_bytes) + cap_hint("patch.max_bytes", kMaxPatchBytesCap) +
                                   "."));
  }
  return out;
}

DiffContractResult validate_diff_text(std::string_view text, const ContractLimits& limits) {
  DiffContractResult r;
  if (text.size() > kMaxDiffBytesCap) {
    // Refused unread: reading costs memory in proportion to the text.
    r.findings.push_back(make_finding(diff_reason::kDiffTooLarge, "",
                                      "the diff is " + std::to_string(text.size()) +
                                          " bytes, over the hard cap of " + std::to_string(kMaxDiffBytesCap) +
                                          " bytes (patch.max_diff_bytes cannot be raised further)."));
    return r;
  }
  DiffReadResult read = read_unified_diff(text);
  r.diff = std::move(read.diff);
  r.findings = std::move(read.findings);
  r.stats = diff_stats(r.diff);
  for (Finding& f : validate_diff(r.diff, text.size(), limits)) r.findings.push_back(std::move(f));
  return r;
}

}  // namespace lazyagent
