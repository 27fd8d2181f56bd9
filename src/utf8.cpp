#include "utf8.h"

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
         (cp >= 0x202a && cp <= 0x202e) ||  // bidi embeddings/overrides
         (cp >= 0x2066 && cp <= 0x2069) ||  // bidi isolates
         cp == 0xfeff;                      // BOM / zero-width no-break space
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  return buf;
}

}  // namespace lazyagent
