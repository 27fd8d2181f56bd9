#include "util/terminal_text.h"

#include <cstdio>

#include "util/utf8.h"

namespace lazyagent {
namespace {

void append_hex_byte(std::string& out, unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  out += buf;
}

void append_codepoint_escape(std::string& out, long cp) {
  char buf[24];  // room for any long: "\\u{" + 16 hex digits + "}"
  std::snprintf(buf, sizeof buf, "\\u{%lx}", cp);
  out += buf;
}

// Walks `text` by code point: `each(out, cp, offset, piece)` with cp < 0 for
// a byte that starts no valid UTF-8 sequence (then `piece` is that byte).
template <typename Each>
std::string by_code_point(std::string_view text, Each each) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    const long cp = decode_utf8(text, i, len);
    each(out, cp, i, text.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace

std::string escape_for_terminal(std::string_view text) {
  return by_code_point(text, [&](std::string& out, long cp, std::size_t i, std::string_view piece) {
    if (cp < 0) {
      append_hex_byte(out, static_cast<unsigned char>(piece[0]));
    } else if (cp == '\n' || cp == '\t') {
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        // CRLF: the CR is harmless line ending noise; drop it.
      } else {
        out += "\\r";
      }
    } else if (cp < 0x20 || cp == 0x7f) {
      append_hex_byte(out, static_cast<unsigned char>(cp));
    } else if (is_control_char(cp) || is_format_control(cp)) {  // C1 (C0/DEL above)
      append_codepoint_escape(out, cp);
    } else {
      out.append(piece);
    }
  });
}

std::string to_valid_utf8(std::string_view text) {
  return by_code_point(text, [](std::string& out, long cp, std::size_t, std::string_view piece) {
    if (cp < 0) append_utf8(out, 0xfffd);
    else out.append(piece);
  });
}

std::string tail_utf8(std::string_view s, std::size_t max, bool& cut) {
  cut = s.size() > max;
  if (!cut) return std::string(s);
  std::size_t from = s.size() - max;
  while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) ++from;
  return std::string(s.substr(from));
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes, bool& cut) {
  cut = text.size() > max_bytes;
  if (!cut) return std::string(text);
  std::size_t end = max_bytes;
  // Step back over continuation bytes so we never split a character.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

std::string trim_space(std::string_view text) {
  const auto b = text.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(text.substr(b, text.find_last_not_of(" \t\r\n") - b + 1));
}

std::string without_trailing_cr(std::string_view line) {
  while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return std::string(line);
}

}  // namespace lazyagent
