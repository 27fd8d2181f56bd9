#include "contract/patch_format.h"

#include <nlohmann/json.hpp>

#include "util/digest.h"

namespace lazyagent {

const char* patch_format_name(PatchFormat f) { return f == PatchFormat::kDiff ? "diff" : "files"; }

PatchFormat detect_patch_format(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return PatchFormat::kDiff;
  if (text[first] == '{') return PatchFormat::kFiles;
  return looks_like_unified_diff(text) ? PatchFormat::kDiff : PatchFormat::kFiles;
}

namespace {

// Text judged as JSON that is no JSON at all and no diff either: said as
// such, not as a JSON syntax error (a truncated `{...` still is one).
bool neither_json_nor_diff(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] == '{') return false;
  return !nlohmann::json::accept(text.begin(), text.end());
}

}  // namespace

PatchCheck check_patch_text(std::string_view text, const ContractLimits& limits) {
  PatchCheck c;
  c.format = detect_patch_format(text);
  if (c.format == PatchFormat::kFiles && neither_json_nor_diff(text)) {
    c.findings.push_back({reason::kUnknownFormat, "",
                          "the patch is neither a unified diff (no `diff --git`, `---`/`+++` or `@@ -` header) nor "
                          "JSON: make it with `git diff` or `diff -u OLD NEW`, or give whole files as "
                          "{\"files\":[{\"path\":...,\"content\":...}]}"});
  } else if (c.format == PatchFormat::kFiles) {
    ContractResult r = validate_patch_json(text, limits);
    c.files = std::move(r.patch);
    c.findings = std::move(r.findings);
    c.suspicious = std::move(r.suspicious);
    if (c.ok()) c.stored = patch_to_json(c.files);
  } else {
    DiffContractResult r = validate_diff_text(text, limits);
    c.diff = std::move(r.diff);
    c.stats = r.stats;
    c.findings = std::move(r.findings);
    if (c.ok()) c.stored = std::string(text);
  }
  // A refused patch is kept as it came, so that its record names it and
  // `verify` can check it like any other.
  if (!c.ok()) c.stored = std::string(text);
  c.sha256 = sha256_hex(c.stored);
  return c;
}

std::string patch_text_sha256(const PatchCheck& check) { return check.sha256; }

}  // namespace lazyagent
