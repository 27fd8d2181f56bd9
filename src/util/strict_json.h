// Strict JSON reader for untrusted text that must be judged byte by byte.
//
// Why not nlohmann::json::parse: it rejects the whole document at the first
// invalid UTF-8 byte or unpaired surrogate escape ("\ud800"), so a caller can
// only say "malformed JSON" and cannot name the string (or the file) at fault.
// This reader follows the RFC 8259 grammar exactly, but leaves judging the
// bytes inside strings to its caller, who can then report them against the
// right path (the patch contract reports invalid_utf8 per file).
//
// Accepts: exactly one value of RFC 8259 JSON, with optional ' ', '\t', '\n',
// '\r' around tokens. In strings:
//   - raw bytes >= 0x20 are copied as they are, valid UTF-8 or not;
//   - \" \\ \/ \b \f \n \r \t decode to their byte;
//   - \uXXXX (hex digits in either case) decodes to UTF-8; a high surrogate
//     escape followed by a low surrogate escape decodes to one code point;
//   - an unpaired surrogate escape is kept as its 3-byte encoding (ED A0 80 for
//     \ud800), which is not UTF-8, so a UTF-8 check on the string refuses it.
// Object members keep document order; duplicate keys are all kept (the reader
// does not report them: a caller that cares counts them).
// Numbers are checked against the grammar and not converted (JsonValue keeps
// no number value).
//
// Refuses, with a message naming the 1-based line and byte column: an empty
// or truncated document, text after the value, a raw byte < 0x20 in a string,
// an unknown escape, a \u escape without four hex digits, a malformed number
// or literal (leading '+', "01" as one value, "tru", trailing commas), a non-
// string key, and nesting deeper than kStrictJsonMaxDepth.
//
// Limits: containers nest at most kStrictJsonMaxDepth levels (the top-level
// value is level 1), so hostile nesting cannot exhaust the stack; deeper input
// is refused with StrictJsonError::too_deep set. The reader does NOT bound the
// text size: the caller must (the tree costs tens of bytes per input byte at
// worst). The only exception it can throw is std::bad_alloc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyagent {

inline constexpr int kStrictJsonMaxDepth = 16;

struct JsonMember;
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  std::string text;                 // kString: decoded bytes, possibly not UTF-8
  std::vector<JsonValue> items;     // kArray
  std::vector<JsonMember> members;  // kObject, in document order, duplicates kept
};
struct JsonMember {
  std::string key;  // decoded like a string value: possibly not UTF-8
  JsonValue value;
};

// "null", "a boolean", "a number", "a string", "an array", "an object":
// for messages such as "must be an object, got an array".
const char* kind_name(JsonValue::Kind k);

struct StrictJsonError {
  // What and where, e.g. "expected ':' at line 1, column 7" (no final period).
  std::string message;
  bool too_deep = false;  // refused for nesting alone (the input may be well-formed)
};

// Reads all of `text` as exactly one JSON value into *out. On failure returns
// false and fills *error; *out is then partly filled and should be ignored.
bool read_strict_json(std::string_view text, JsonValue* out, StrictJsonError* error);

}  // namespace lazyagent
