#include "report/html_text.h"

#include <cstdio>

#include "util/utf8.h"

namespace lazyagent {

namespace {

void html_put_entity_or_char(std::string& out, char c) {
  switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
  }
}

std::string html_marker(std::string_view s, std::size_t i, long cp) {
  if (cp < 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned char>(s[i]));
    return buf;
  }
  return visible_codepoint(cp);
}

// `spans`: markers in <span class="cc">…</span> (element content) or bare.
std::string html_escape_impl(std::string_view s, bool spans) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if (b < 0x80 && b != 0x7f && (b >= 0x20 || b == '\n' || b == '\t')) {
      html_put_entity_or_char(out, s[i]);
      ++i;
      continue;
    }
    if (b == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {  // CRLF: a line break
      ++i;
      continue;
    }
    std::size_t len = 1;
    const long cp = decode_utf8(s, i, len);
    if (cp >= 0 && !html_hides_codepoint(cp)) {
      out.append(s.substr(i, len));
    } else {
      const std::string marker = html_marker(s, i, cp);
      if (spans) out += "<span class=\"cc\">";
      for (char c : marker) html_put_entity_or_char(out, c);
      if (spans) out += "</span>";
    }
    i += len;
  }
  return out;
}

}  // namespace

bool html_hides_codepoint(long cp) {
  if (cp == '\n' || cp == '\t') return false;
  return is_control_char(cp) || is_format_control(cp) || is_bidi_control(cp) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0xfff9 && cp <= 0xfffb) ||  // interlinear annotation controls
         (cp >= 0xe0000 && cp <= 0xe007f);  // tag characters (invisible)
}

std::string visible_codepoint(long cp) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "<U+%04lX>", cp);
  return buf;
}

std::string html_text(std::string_view text) { return html_escape_impl(text, true); }

std::string html_attr(std::string_view text) { return html_escape_impl(text, false); }

}  // namespace lazyagent
