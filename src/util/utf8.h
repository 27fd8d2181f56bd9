// Strict UTF-8 decoding, shared by everything that inspects untrusted text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lazyagent {

// Decodes one code point starting at s[pos]. On success returns the code
// point and sets `len` to its byte length. On a malformed sequence (bad lead
// or continuation byte, overlong form, surrogate, > U+10FFFF, truncated)
// returns -1 and sets `len` to 1 so a caller can skip the byte.
long decode_utf8(std::string_view s, std::size_t pos, std::size_t& len);

// Encodes a code point (caller guarantees it is a valid scalar value).
void append_utf8(std::string& out, long cp);

// C0 (U+0000-U+001F), DEL (U+007F) or C1 (U+0080-U+009F). False for -1 (what
// decode_utf8 returns for an invalid byte): that is invalid UTF-8, not a control.
bool is_control_char(long cp);

// Zero-width characters, LRM/RLM/ALM, bidi embeddings, overrides and
// isolates, the invisible word joiner and operators (U+2060..U+2064), and the
// BOM: they can hide or reorder what a reader sees. Terminal text and contract
// messages show them as escapes.
bool is_format_control(long cp);

// One byte as the escape "\xNN" (lower-case hex), for messages about untrusted text.
std::string hex_byte(unsigned char b);
// The explicit bidirectional controls of "Trojan Source" (CVE-2021-42574):
// embeddings and overrides U+202A..U+202E, isolates U+2066..U+2069. They make
// text display in an order other than the one a compiler reads it in.
bool is_bidi_control(long cp);

// The Unicode name of a format control, line separator or bidi control
// ("RIGHT-TO-LEFT OVERRIDE"); "" for any other code point.
const char* format_char_name(long cp);

}  // namespace lazyagent
