// Fuzz target: the strict JSON reader (src/strict_json.*), which reads patches
// byte by byte before the contract judges them.
//
// Input: any bytes as a JSON document. Checked beyond crashes, against
// nlohmann::json as a second opinion (differential):
//   - a document nlohmann accepts (and that nests at most kStrictJsonMaxDepth
//     levels) is accepted too, with the same strings, keys, order and kinds;
//   - a document the reader accepts whose strings and keys all decode to valid
//     UTF-8 is accepted by nlohmann too, unless a number overflows a double
//     (nlohmann refuses it, RFC 8259 allows it); the reader accepts nothing
//     else but non-UTF-8 strings, which its callers judge;
//   - a refusal has a message naming line and column; too_deep only for depth.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_checks.h"
#include "util/strict_json.h"

namespace {

using lazyagent::JsonValue;
using Kind = JsonValue::Kind;

int depth_of(const nlohmann::ordered_json& j) {
  int d = 0;
  if (j.is_array())
    for (const auto& v : j) d = std::max(d, depth_of(v));
  if (j.is_object())
    for (const auto& [k, v] : j.items()) d = std::max(d, depth_of(v));
  return j.is_structured() ? d + 1 : 0;
}

int depth_of(const JsonValue& v) {
  int d = 0;
  for (const auto& i : v.items) d = std::max(d, depth_of(i));
  for (const auto& m : v.members) d = std::max(d, depth_of(m.value));
  return (v.kind == Kind::kArray || v.kind == Kind::kObject) ? d + 1 : 0;
}

bool all_strings_utf8(const JsonValue& v) {
  if (v.kind == Kind::kString && !lazyagent::is_valid_utf8(v.text)) return false;
  for (const auto& i : v.items)
    if (!all_strings_utf8(i)) return false;
  for (const auto& m : v.members)
    if (!lazyagent::is_valid_utf8(m.key) || !all_strings_utf8(m.value)) return false;
  return true;
}

// Same tree. nlohmann's ordered_json keeps the first of duplicate keys'
// position but the last value, so objects with duplicate keys are compared
// by key set only.
void check_same(const JsonValue& a, const nlohmann::ordered_json& b) {
  switch (a.kind) {
    case Kind::kNull: FUZZ_CHECK(b.is_null(), "same kind: null"); break;
    case Kind::kBool: FUZZ_CHECK(b.is_boolean(), "same kind: boolean"); break;
    case Kind::kNumber: FUZZ_CHECK(b.is_number(), "same kind: number"); break;
    case Kind::kString:
      FUZZ_CHECK(b.is_string() && b.get<std::string>() == a.text, "same string");
      break;
    case Kind::kArray:
      FUZZ_CHECK(b.is_array() && b.size() == a.items.size(), "same array length");
      for (std::size_t i = 0; i < a.items.size(); ++i) check_same(a.items[i], b[i]);
      break;
    case Kind::kObject: {
      FUZZ_CHECK(b.is_object(), "same kind: object");
      bool duplicates = false;
      for (std::size_t i = 0; i < a.members.size(); ++i)
        for (std::size_t k = 0; k < i; ++k) duplicates = duplicates || a.members[k].key == a.members[i].key;
      if (duplicates) {
        for (const auto& m : a.members) FUZZ_CHECK(b.contains(m.key), "same keys");
        break;
      }
      FUZZ_CHECK(b.size() == a.members.size(), "same member count");
      std::size_t i = 0;
      for (const auto& [key, value] : b.items()) {
        FUZZ_CHECK(key == a.members[i].key, "same key order");
        check_same(a.members[i].value, value);
        ++i;
      }
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  JsonValue value;
  lazyagent::StrictJsonError error;
  const bool ok = lazyagent::read_strict_json(text, &value, &error);
  if (!ok) {
    FUZZ_CHECK(error.message.find("line ") != std::string::npos &&
                   error.message.find("column ") != std::string::npos,
               "a refusal names line and column: " + error.message);
    FUZZ_CHECK(lazyagent::fuzz::is_terminal_safe(error.message, false), "refusal message printable");
  } else {
    FUZZ_CHECK(depth_of(value) <= lazyagent::kStrictJsonMaxDepth, "accepted depth within the limit");
  }

  const auto theirs = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  // nlohmann stops reading at a NUL byte ("9\0garbage" is 9 to it), which JSON
  // does not allow anywhere outside a string's \u0000 escape: no second
  // opinion on such text.
  if (text.find('\0') != std::string_view::npos) return 0;
  const bool they_accept = !theirs.is_discarded();
  if (they_accept && depth_of(theirs) <= lazyagent::kStrictJsonMaxDepth) {
    FUZZ_CHECK(ok, "nlohmann accepts it, the strict reader must too: " + error.message);
    check_same(value, theirs);
  }
  if (they_accept && depth_of(theirs) > lazyagent::kStrictJsonMaxDepth)
    FUZZ_CHECK(!ok && error.too_deep, "too deep is refused as too_deep");
  if (ok && all_strings_utf8(value) && !they_accept) {
    // nlohmann refuses numbers beyond a double ("-0.5e+1010": out_of_range
    // 406, "number overflow"); RFC 8259's grammar allows them and the reader
    // converts no number, so that refusal is no second opinion.
    bool overflow = false;
    try {
      (void)nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::out_of_range&) {
      overflow = true;
    } catch (const nlohmann::json::exception&) {
    }
    FUZZ_CHECK(overflow, "the strict reader accepted non-JSON");
  }
  if (!ok && error.too_deep) FUZZ_CHECK(!they_accept || depth_of(theirs) > lazyagent::kStrictJsonMaxDepth,
                                        "too_deep only for deep documents");
  return 0;
}
