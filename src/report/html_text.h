// Untrusted text on its way into an HTML page (the eval report, report_page.h).
//
// Everything an eval leaves behind is written by code under test: patches,
// test output, test names, reasons, even what a finding quotes. In the page
// it is text, never markup: `& < > " '` become entities (so no tag, no
// attribute and no end of a <textarea>/<script>/<svg> element can start), and
// what would change how text reads instead of what it says is shown as a
// visible marker, <U+202E>, in a span of class "cc": C0/C1 controls and DEL
// (but '\n' and '\t'), bidi embeddings, overrides and isolates, zero-width and
// other format characters, the line and paragraph separators. Invalid UTF-8
// bytes show as <0xFF>. CRLF is a line break. Pure.
#pragma once

#include <string>
#include <string_view>

namespace lazyagent {

// For element content and for attribute values in double quotes.
std::string html_text(std::string_view text);

// The same for an attribute value that holds no markers: every character the
// text shows as a marker is written as its <U+XXXX> spelling (an attribute
// cannot hold a span). Used for data-* values and titles.
std::string html_attr(std::string_view text);

// The code point's marker spelling, e.g. "<U+202E>" (unescaped).
std::string visible_codepoint(long cp);

// True when the code point is shown as a marker rather than itself.
bool html_hides_codepoint(long cp);

}  // namespace lazyagent
