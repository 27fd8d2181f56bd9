// Fuzz target: escaping untrusted text for a terminal or a JSON document
// (src/terminal_text.*, ARCHITECTURE invariant 8).
//
// Input: any bytes, as a sandbox may print them. Checked beyond crashes:
//   - escape_for_terminal output is valid UTF-8 with no control character but
//     '\n' and '\t', no bidi/zero-width format control, no CR at all;
//     text that needs no escaping passes unchanged;
//   - to_valid_utf8 output is valid UTF-8, and the identity on valid UTF-8;
//   - truncate_utf8 keeps a prefix of at most max_bytes, never splits a
//     character of valid text, and reports the cut exactly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "util/terminal_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using lazyagent::fuzz::is_terminal_safe;

  const std::string shown = lazyagent::escape_for_terminal(text);
  FUZZ_CHECK(is_terminal_safe(shown, true), "escaped text has no control or format character");
  FUZZ_CHECK(shown.find('\r') == std::string::npos, "escaped text has no CR");
  if (is_terminal_safe(text, true)) FUZZ_CHECK(shown == text, "safe text passes unchanged");
  // Its output is safe, so escaping twice is escaping once.
  FUZZ_CHECK(lazyagent::escape_for_terminal(shown) == shown, "escaped text is a fixed point");

  const std::string valid = lazyagent::to_valid_utf8(text);
  FUZZ_CHECK(lazyagent::is_valid_utf8(valid), "to_valid_utf8 output is valid UTF-8");
  if (lazyagent::is_valid_utf8(text)) FUZZ_CHECK(valid == text, "to_valid_utf8 keeps valid text");

  const std::size_t max = size == 0 ? 0 : data[0] % (size + 1);
  bool cut = false;
  const std::string head = lazyagent::truncate_utf8(text, max, cut);
  FUZZ_CHECK(head.size() <= max || (!cut && head.size() == size), "truncation within max_bytes");
  FUZZ_CHECK(text.substr(0, head.size()) == head, "truncation keeps a prefix");
  FUZZ_CHECK(cut == (size > max), "the cut is reported exactly when it happens");
  if (lazyagent::is_valid_utf8(text)) {
    FUZZ_CHECK(lazyagent::is_valid_utf8(head), "truncating valid text never splits a character");
    FUZZ_CHECK(!cut || head.size() + 3 >= max, "a cut loses at most 3 bytes of a character");
  }
  return 0;
}
