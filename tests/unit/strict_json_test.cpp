// Strict JSON reader: the grammar it accepts, the exact message for each way
// input can be malformed, the nesting limit, and the byte transparency the patch
// contract relies on (invalid UTF-8 and lone surrogates come through, not refused).
#include "util/strict_json.h"

#include "catch_compat.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace lazyagent;

namespace {

using Kind = JsonValue::Kind;

JsonValue read_ok(std::string_view text) {
  JsonValue v;
  StrictJsonError e;
  INFO("input: " << std::string(text));
  const bool ok = read_strict_json(text, &v, &e);
  INFO("error: " << e.message);
  REQUIRE(ok);
  return v;
}

StrictJsonError read_bad(std::string_view text) {
  JsonValue v;
  StrictJsonError e;
  INFO("input: " << std::string(text));
  REQUIRE_FALSE(read_strict_json(text, &v, &e));
  return e;
}

std::string error_of(std::string_view text) { return read_bad(text).message; }

// The decoded bytes of a document that is one JSON string.
std::string string_of(std::string_view text) {
  const JsonValue v = read_ok(text);
  REQUIRE(v.kind == Kind::kString);
  return v.text;
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("strict_json: scalars, with whitespace around them", "[strict_json]") {
  CHECK(read_ok("true").kind == Kind::kBool);
  CHECK(read_ok("false").kind == Kind::kBool);
  CHECK(read_ok("null").kind == Kind::kNull);
  CHECK(read_ok(" \t\r\n\"x\" \t\r\n").text == "x");
  for (const char* n : {"0", "-0", "7", "-12", "3.25", "0.5", "1e9", "1E+2", "-2.5e-3", "10"}) {
    INFO(n);
    const JsonValue v = read_ok(n);
    CHECK(v.kind == Kind::kNumber);
    CHECK(v.text.empty());  // numbers are checked, not kept
  }
}

TEST_CASE("strict_json: containers keep document order", "[strict_json]") {
  CHECK(read_ok("{}").members.empty());
  CHECK(read_ok("{ }").kind == Kind::kObject);
  CHECK(read_ok("[]").items.empty());
  CHECK(read_ok("[ ]").kind == Kind::kArray);

  const JsonValue doc = read_ok(R"({"files": [{"path": "a.py", "content": "x\n"}, 1, null],
                                    "z": [true, false, [], {}]})");
  REQUIRE(doc.kind == Kind::kObject);
  REQUIRE(doc.members.size() == 2);
  CHECK(doc.members[0].key == "files");
  CHECK(doc.members[1].key == "z");
  const JsonValue& files = doc.members[0].value;
  REQUIRE(files.kind == Kind::kArray);
  REQUIRE(files.items.size() == 3);
  const JsonValue& entry = files.items[0];
  REQUIRE(entry.members.size() == 2);
  CHECK(entry.members[0].key == "path");
  CHECK(entry.members[0].value.text == "a.py");
  CHECK(entry.members[1].key == "content");
  CHECK(entry.members[1].value.text == "x\n");
  CHECK(files.items[1].kind == Kind::kNumber);
  CHECK(files.items[2].kind == Kind::kNull);
  const JsonValue& z = doc.members[1].value;
  REQUIRE(z.items.size() == 4);
  CHECK(z.items[0].kind == Kind::kBool);
  CHECK(z.items[1].kind == Kind::kBool);
  CHECK(z.items[2].kind == Kind::kArray);
  CHECK(z.items[3].kind == Kind::kObject);
}

TEST_CASE("strict_json: duplicate keys are kept, in order, not reported", "[strict_json]") {
  const JsonValue doc = read_ok(R"({"a":"1","b":"2","a":"3"})");
  REQUIRE(doc.members.size() == 3);
  CHECK(doc.members[0].key == "a");
  CHECK(doc.members[0].value.text == "1");
  CHECK(doc.members[1].key == "b");
  CHECK(doc.members[2].key == "a");
  CHECK(doc.members[2].value.text == "3");
}

TEST_CASE("strict_json: kind names read in a sentence", "[strict_json]") {
  CHECK(std::string(kind_name(Kind::kNull)) == "null");
  CHECK(std::string(kind_name(Kind::kBool)) == "a boolean");
  CHECK(std::string(kind_name(Kind::kNumber)) == "a number");
  CHECK(std::string(kind_name(Kind::kString)) == "a string");
  CHECK(std::string(kind_name(Kind::kArray)) == "an array");
  CHECK(std::string(kind_name(Kind::kObject)) == "an object");
}

TEST_CASE("strict_json: simple escapes decode to their byte", "[strict_json]") {
  CHECK(string_of(R"("\"\\\/\b\f\n\r\t")") == "\"\\/\b\f\n\r\t");
  CHECK(string_of(R"("a\u0041b")") == "aAb");
  CHECK(string_of(R"("\u0000")") == std::string("\0", 1));
  CHECK(string_of(R"("\u00e9\u00E9")") == "\xc3\xa9\xc3\xa9");  // either hex case
  CHECK(string_of(R"("\u20ac")") == "\xe2\x82\xac");
  CHECK(string_of(R"("\u202e")") == "\xe2\x80\xae");  // decoded; judging it is the caller's job
}

TEST_CASE("strict_json: surrogate escapes", "[strict_json]") {
  SECTION("a high + low pair is one code point") {
    CHECK(string_of(R"("\ud83d\ude00")") == "\xf0\x9f\x98\x80");
    CHECK(string_of(R"("\uD800\uDC00")") == "\xf0\x90\x80\x80");
    CHECK(string_of(R"("\udbff\udfff")") == "\xf4\x8f\xbf\xbf");
  }
  SECTION("a lone surrogate is kept as its 3-byte form, which is not UTF-8") {
    CHECK(string_of(R"("\ud800")") == "\xed\xa0\x80");
    CHECK(string_of(R"("\udc00")") == "\xed\xb0\x80");
    CHECK(string_of(R"("x\udfffy")") == "x\xed\xbf\xbfy");
  }
  SECTION("a high surrogate not followed by a low one: the next escape is read on its own") {
    CHECK(string_of(R"("\ud800\u0041")") == "\xed\xa0\x80"
                                            "A");
    CHECK(string_of(R"("\ud800\ud800")") == "\xed\xa0\x80\xed\xa0\x80");
    CHECK(string_of(R"("\udc00\ud800")") == "\xed\xb0\x80\xed\xa0\x80");  // wrong order
    CHECK(string_of(R"("\ud800\n")") == "\xed\xa0\x80\n");
    CHECK(string_of(R"("\ud800x")") == "\xed\xa0\x80x");
  }
  SECTION("a high surrogate followed by a broken escape fails on that escape") {
    CHECK(error_of(R"("\ud800\u12")") == "invalid \\u escape at line 1, column 10");
  }
}

TEST_CASE("strict_json: raw string bytes come through as they are", "[strict_json]") {
  // Invalid UTF-8: a lone continuation, 0xff, an overlong '/', an encoded
  // surrogate, a truncated sequence. DEL and C1 are >= 0x20 and pass too.
  const std::string raw = "\x80\xff\xc0\xaf\xed\xa0\x80\xe2\x82\x7f\xc2\x9b";
  CHECK(string_of("\"" + raw + "\"") == raw);
  const JsonValue doc = read_ok("{\"" + raw + "\":\"" + raw + "\"}");
  REQUIRE(doc.members.size() == 1);
  CHECK(doc.members[0].key == raw);
  CHECK(doc.members[0].value.text == raw);
}

TEST_CASE("strict_json: the message for each malformed input", "[strict_json]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "unexpected end of input at line 1, column 1"},
      {"  ", "unexpected end of input at line 1, column 3"},
      {"[1,", "unexpected end of input at line 1, column 4"},
      {R"({"a":)", "unexpected end of input at line 1, column 6"},
      {"1 2", "unexpected text after the JSON value at line 1, column 3"},
      {"{}}", "unexpected text after the JSON value at line 1, column 3"},
      {"01", "unexpected text after the JSON value at line 1, column 2"},
      {"truex", "unexpected text after the JSON value at line 1, column 5"},
      {"{,}", "expected a string key at line 1, column 2"},
      {"{1:2}", "expected a string key at line 1, column 2"},
      {R"({"a":1,})", "expected a string key at line 1, column 8"},
      {R"({"a" 1})", "expected ':' at line 1, column 6"},
      {R"({"a":1 "b":2})", "expected ',' or '}' at line 1, column 8"},
      {R"({"a":1)", "expected ',' or '}' at line 1, column 7"},
      {"[1 2]", "expected ',' or ']' at line 1, column 4"},
      {"[1", "expected ',' or ']' at line 1, column 3"},
      {"\"a\x01\"", "unescaped control character in a string at line 1, column 3"},
      {"\"a\nb\"", "unescaped control character in a string at line 1, column 3"},
      {R"("\x")", "invalid escape sequence at line 1, column 3"},
      {R"("\U0041")", "invalid escape sequence at line 1, column 3"},
      {R"("\u12")", "invalid \\u escape at line 1, column 4"},
      {R"("\u12G4")", "invalid \\u escape at line 1, column 4"},
      {R"("\u)", "invalid \\u escape at line 1, column 4"},
      {R"("abc)", "unterminated string at line 1, column 5"},
      {R"("ab\)", "unterminated string at line 1, column 5"},
      {"-", "unexpected character '-' at line 1, column 1"},
      {"+1", "unexpected character '+' at line 1, column 1"},
      {".5", "unexpected character '.' at line 1, column 1"},
      {"[1,]", "unexpected character ']' at line 1, column 4"},
      {R"({"a":})", "unexpected character '}' at line 1, column 6"},
      {"tru", "unexpected character 't' at line 1, column 1"},
      {"nul", "unexpected character 'n' at line 1, column 1"},
      {"falsy", "unexpected character 'f' at line 1, column 1"},
      {"True", "unexpected character 'T' at line 1, column 1"},
      {"'a'", "unexpected character ''' at line 1, column 1"},
      {"\xff", "unexpected byte \\xff at line 1, column 1"},
      {"\x01", "unexpected byte \\x01 at line 1, column 1"},
      {"\x7f", "unexpected byte \\x7f at line 1, column 1"},
      {"[\f]", "unexpected byte \\x0c at line 1, column 2"},  // not JSON whitespace
      {"1.", "expected a digit after '.' at line 1, column 3"},
      {"1.e5", "expected a digit after '.' at line 1, column 3"},
      {"1e", "expected a digit in the exponent at line 1, column 3"},
      {"1e+", "expected a digit in the exponent at line 1, column 4"},
      {"-1E-x", "expected a digit in the exponent at line 1, column 5"},
  };
  for (const auto& [text, message] : cases) {
    INFO("input: " << text);
    const StrictJsonError e = read_bad(text);
    CHECK(e.message == message);
    CHECK_FALSE(e.too_deep);
  }
}

TEST_CASE("strict_json: positions are 1-based lines and byte columns", "[strict_json]") {
  CHECK(error_of("[1,\n 2,\n x]") == "unexpected character 'x' at line 3, column 2");
  CHECK(error_of("[\r\n x]") == "unexpected character 'x' at line 2, column 2");  // CR is a column
  CHECK(error_of("[\"\xc3\xa9\", x]") == "unexpected character 'x' at line 1, column 8");
  CHECK(error_of("\n\n") == "unexpected end of input at line 3, column 1");
}

TEST_CASE("strict_json: nesting is limited to 16 levels", "[strict_json]") {
  REQUIRE(kStrictJsonMaxDepth == 16);
  SECTION("16 levels are read") {
    CHECK(read_ok(repeat("[", 16) + repeat("]", 16)).kind == Kind::kArray);
    CHECK(read_ok(repeat(R"({"a":)", 15) + "[]" + repeat("}", 15)).kind == Kind::kObject);
    CHECK(read_ok(repeat("[", 16) + "1" + repeat("]", 16)).kind == Kind::kArray);  // scalars add none
  }
  SECTION("the 17th is refused where it opens, even in a well-formed document") {
    const StrictJsonError arrays = read_bad(repeat("[", 17) + repeat("]", 17));
    CHECK(arrays.message == "nested more than 16 levels deep at line 1, column 17");
    CHECK(arrays.too_deep);
    const StrictJsonError objects = read_bad(repeat(R"({"a":)", 17) + "1" + repeat("}", 17));
    CHECK(objects.message == "nested more than 16 levels deep at line 1, column 81");
    CHECK(objects.too_deep);
  }
  SECTION("hostile depth fails fast, without recursing through it") {
    const StrictJsonError e = read_bad(repeat("[", 1000000));
    CHECK(e.message == "nested more than 16 levels deep at line 1, column 17");
    CHECK(e.too_deep);
  }
}
