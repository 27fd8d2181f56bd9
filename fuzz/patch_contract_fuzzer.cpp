// Fuzz target: the patch contract (src/patch_contract.*), the gate between a
// model's reply and the sandbox (ARCHITECTURE invariant 6).
//
// Input: patch JSON text, as the planner prints it. Checked beyond crashes
// (fuzz_checks.h): an accepted patch has only relative, normal paths that stay
// under the root, are on the allowlist and are unique; complete UTF-8 content
// without control characters; file and byte counts within the limits; it
// survives patch_to_json unchanged. Every finding has a known reason code and
// a printable one-line message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using lazyagent::ContractLimits;
  // The demo's allowlist, plus a directory entry so that nested paths can pass.
  ContractLimits limits;
  limits.allow = {"calculator.py", "src/", "docs/notes.md"};
  lazyagent::fuzz::validate_and_check(text, limits);
  // Lowered limits (config may lower them): the same text must obey them too.
  limits.max_files = 1;
  limits.max_bytes = 64;
  lazyagent::fuzz::validate_and_check(text, limits);
  return 0;
}
