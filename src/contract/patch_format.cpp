#include "contract/patch_format.h"

#include "util/digest.h"

namespace lazyagent {

const char* patch_format_name(PatchFormat f) { return f == PatchFormat::kDiff ? "diff" : "files"; }

PatchFormat detect_patch_format(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return PatchFormat::kDiff;
  if (text[first] == '{') return PatchFormat::kFiles;
  return looks_like_unified_diff(text) ? PatchFormat::kDiff : PatchFormat::kFiles;
}

PatchCheck check_patch_text(std::string_view text, const ContractLimits& limits) {
  PatchCheck c;
  c.format = detect_patch_format(text);
  if (c.format == PatchFormat::kFiles) {
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
  c.sha256 = c.ok() ? sha256_hex(c.stored) : "";
  return c;
}

std::string patch_text_sha256(const PatchCheck& check) { return check.sha256; }

}  // namespace lazyagent
