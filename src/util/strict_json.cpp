// Strict JSON reader: see strict_json.h for what it accepts and refuses, and why.
#include "util/strict_json.h"

#include <cstdio>

#include "util/utf8.h"

namespace lazyagent {
namespace {

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  // Reads the whole text as exactly one value. On failure error() says what and where.
  bool read_document(JsonValue* out) {
    if (!value(out, 1)) return false;
    skip_ws();
    return pos_ == text_.size() || fail("unexpected text after the JSON value");
  }
  const std::string& error() const { return error_; }
  bool too_deep() const { return too_deep_; }

 private:
  bool value(JsonValue* out, int depth) {
    skip_ws();
    if (pos_ >= text_.size()) return fail("unexpected end of input");
    switch (text_[pos_]) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': out->kind = JsonValue::Kind::kString; return string(&out->text);
      case 't': out->kind = JsonValue::Kind::kBool; return literal("true");
      case 'f': out->kind = JsonValue::Kind::kBool; return literal("false");
      case 'n': out->kind = JsonValue::Kind::kNull; return literal("null");
      default: out->kind = JsonValue::Kind::kNumber; return number();
    }
  }

  bool enter(int depth) {
    if (depth <= kStrictJsonMaxDepth) return true;
    too_deep_ = true;
    return fail("nested more than " + std::to_string(kStrictJsonMaxDepth) + " levels deep");
  }

  bool object(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::kObject;
    if (!enter(depth)) return false;
    ++pos_;  // '{'
    skip_ws();
    if (peek('}')) return ++pos_, true;
    while (true) {
      skip_ws();
      if (!peek('"')) return fail("expected a string key");
      JsonMember m;
      if (!string(&m.key)) return false;
      skip_ws();
      if (!peek(':')) return fail("expected ':'");
      ++pos_;
      if (!value(&m.value, depth + 1)) return false;
      out->members.push_back(std::move(m));
      skip_ws();
      if (peek('}')) return ++pos_, true;
      if (!peek(',')) return fail("expected ',' or '}'");
      ++pos_;
    }
  }

  bool array(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::kArray;
    if (!enter(depth)) return false;
    ++pos_;  // '['
    skip_ws();
    if (peek(']')) return ++pos_, true;
    while (true) {
      out->items.emplace_back();
      if (!value(&out->items.back(), depth + 1)) return false;
      skip_ws();
      if (peek(']')) return ++pos_, true;
      if (!peek(',')) return fail("expected ',' or ']'");
      ++pos_;
    }
  }

  bool string(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') return ++pos_, true;
      if (c < 0x20) return fail("unescaped control character in a string");
      ++pos_;
      if (c != '\\') {
        out->push_back(static_cast<char>(c));  // raw bytes kept, valid or not
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u':
          if (!unicode_escape(out)) return false;
          break;
        default: --pos_; return fail("invalid escape sequence");
      }
    }
    return fail("unterminated string");
  }

  // After "\u": one code point, or a high+low surrogate pair. An unpaired
  // surrogate is kept as its 3-byte encoding, which the UTF-8 rule refuses.
  bool unicode_escape(std::string* out) {
    long cp = 0;
    if (!hex4(&cp)) return fail("invalid \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff && text_.substr(pos_, 2) == "\\u") {
      const std::size_t save = pos_;
      pos_ += 2;
      long low = 0;
      if (hex4(&low) && low >= 0xdc00 && low <= 0xdfff) {
        append_utf8(*out, 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00));
        return true;
      }
      pos_ = save;  // not a pair: the next escape is read on its own
    }
    if (cp >= 0xd800 && cp <= 0xdfff) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      append_utf8(*out, cp);
    }
    return true;
  }

  bool hex4(long* cp) {
    if (pos_ + 4 > text_.size()) return false;
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_ + i];
      const int d = (h >= '0' && h <= '9')   ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
      if (d < 0) return false;
      *cp = *cp * 16 + d;
    }
    pos_ += 4;
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; the value itself is never needed.
  bool number() {
    const std::size_t start = pos_;
    if (peek('-')) ++pos_;
    if (peek('0')) {
      ++pos_;
    } else if (!digits()) {
      pos_ = start;
      return fail(unexpected());
    }
    if (peek('.')) {
      ++pos_;
      if (!digits()) return fail("expected a digit after '.'");
    }
    if (peek('e') || peek('E')) {
      ++pos_;
      if (peek('+') || peek('-')) ++pos_;
      if (!digits()) return fail("expected a digit in the exponent");
    }
    return true;
  }

  bool digits() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail(unexpected());
    pos_ += word.size();
    return true;
  }

  std::string unexpected() const {
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c > 0x20 && c < 0x7f) return std::string("unexpected character '") + char(c) + "'";
    return "unexpected byte " + hex_byte(c);
  }

  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  // Records what went wrong at the current position (1-based line and byte column).
  bool fail(const std::string& what) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n')
        ++line, column = 1;
      else
        ++column;
    }
    error_ = what + " at line " + std::to_string(line) + ", column " + std::to_string(column);
    return false;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
  bool too_deep_ = false;
};

}  // namespace

const char* kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "a boolean";
    case JsonValue::Kind::kNumber: return "a number";
    case JsonValue::Kind::kString: return "a string";
    case JsonValue::Kind::kArray: return "an array";
    case JsonValue::Kind::kObject: return "an object";
  }
  return "?";
}

bool read_strict_json(std::string_view text, JsonValue* out, StrictJsonError* error) {
  JsonReader reader(text);
  if (reader.read_document(out)) return true;
  *error = StrictJsonError{reader.error(), reader.too_deep()};
  return false;
}

}  // namespace lazyagent
