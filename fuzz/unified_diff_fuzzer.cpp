// Fuzz target: the unified diff reader (src/unified_diff.*), the diff
// contract, the strict applier and the writer: the path from a model's diff
// to the files a sandbox gets (ARCHITECTURE invariant 6, diffs).
//
// Input: diff text. Checked beyond crashes (fuzz_checks.h, check_diff_text):
// every finding has a known code and a printable message; an accepted diff
// names only relative, normal, allowed, unique paths, no rename, copy,
// binary, symlink or submodule, within the limits; where a section applies
// to the fixed file, its change written back as a diff passes the contract
// and applies to the same bytes. Then with lowered limits, the same text
// must obey them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  lazyagent::ContractLimits limits;
  limits.allow = {"calculator.py", "src/", "new.py"};
  limits.max_files = 20;
  limits.max_diff_bytes = 1 << 20;
  limits.max_bytes = 1 << 20;
  limits.max_changed_lines = 100000;
  lazyagent::fuzz::check_diff_text(text, limits);
  limits.max_files = 1;
  limits.max_diff_bytes = 200;
  limits.max_bytes = 64;
  limits.max_changed_lines = 4;
  lazyagent::fuzz::check_diff_text(text, limits);
  (void)lazyagent::looks_like_unified_diff(text);
  return 0;
}
