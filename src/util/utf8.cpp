#include "util/utf8.h"

#include <cstdio>

namespace lazyagent {

long decode_utf8(std::string_view s, std::size_t pos, std::size_t& len) {
  len = 1;
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return b0;
  std::size_t need;
  long cp;
  long min;
  if ((b0 & 0xe0) == 0xc0) { need = 1; cp = b0 & 0x1f; min = 0x80; }
  else if ((b0 & 0xf0) == 0xe0) { need = 2; cp = b0 & 0x0f; min = 0x800; }
  else if ((b0 & 0xf8) == 0xf0) { need = 3; cp = b0 & 0x07; min = 0x10000; }
  else return -1;
  if (pos + need >= s.size()) return -1;  // truncated sequence
  for (std::size_t i = 1; i <= need; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  len = need + 1;
  return cp;
}

void append_utf8(std::string& out, long cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

bool is_control_char(long cp) {
  return (cp >= 0 && cp < 0x20) || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
}

bool is_format_control(long cp) {
  return (cp >= 0x200b && cp <= 0x200f) ||  // zero-width, LRM/RLM
         cp == 0x061c ||                    // ARABIC LETTER MARK
         is_bidi_control(cp) ||             // embeddings, overrides, isolates
         (cp >= 0x2060 && cp <= 0x2064) ||  // word joiner, invisible operators
         cp == 0xfeff;                      // BOM / zero-width no-break space
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  return buf;
}

bool is_bidi_control(long cp) {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

const char* format_char_name(long cp) {
  switch (cp) {
    case 0x061c: return "ARABIC LETTER MARK";
    case 0x200b: return "ZERO WIDTH SPACE";
    case 0x200c: return "ZERO WIDTH NON-JOINER";
    case 0x200d: return "ZERO WIDTH JOINER";
    case 0x200e: return "LEFT-TO-RIGHT MARK";
    case 0x200f: return "RIGHT-TO-LEFT MARK";
    case 0x2028: return "LINE SEPARATOR";
    case 0x2029: return "PARAGRAPH SEPARATOR";
    case 0x202a: return "LEFT-TO-RIGHT EMBEDDING";
    case 0x202b: return "RIGHT-TO-LEFT EMBEDDING";
    case 0x202c: return "POP DIRECTIONAL FORMATTING";
    case 0x202d: return "LEFT-TO-RIGHT OVERRIDE";
    case 0x202e: return "RIGHT-TO-LEFT OVERRIDE";
    case 0x2060: return "WORD JOINER";
    case 0x2061: return "FUNCTION APPLICATION";
    case 0x2062: return "INVISIBLE TIMES";
    case 0x2063: return "INVISIBLE SEPARATOR";
    case 0x2064: return "INVISIBLE PLUS";
    case 0x2066: return "LEFT-TO-RIGHT ISOLATE";
    case 0x2067: return "RIGHT-TO-LEFT ISOLATE";
    case 0x2068: return "FIRST STRONG ISOLATE";
    case 0x2069: return "POP DIRECTIONAL ISOLATE";
    case 0xfeff: return "ZERO WIDTH NO-BREAK SPACE";
    default: return "";
  }
}

}  // namespace lazyagent
