// Untrusted text on its way to a terminal or a JSON document.
//
// Sandbox output is written by code we do not trust (ARCHITECTURE invariant 8).
// A raw ESC can rewrite a user's terminal (titles, cursor moves, OSC 52
// clipboard writes); a bare CR can overwrite "FAILED" with "OK"; bidi controls
// can reorder what a reviewer reads. Everything that is not printable text,
// newline or tab is shown as a visible escape instead.
#pragma once

#include <string>
#include <string_view>

namespace lazyagent {

// For humans: printable UTF-8, '\n' and '\t' pass; CRLF becomes '\n'; every
// other control (C0, DEL, C1), bidi/zero-width format controls and invalid
// bytes become visible escapes: \r, \x1b, \u{9b}, \u{202e}, \xff.
std::string escape_for_terminal(std::string_view text);

// For JSON: invalid UTF-8 bytes become U+FFFD so the document is always
// valid; the JSON encoder then escapes control characters itself.
std::string to_valid_utf8(std::string_view text);

// Keep at most `max_bytes`, cutting on a UTF-8 boundary; sets `cut`.
std::string truncate_utf8(std::string_view text, std::size_t max_bytes, bool& cut);
// The last `max_bytes`, starting on a UTF-8 boundary; sets `cut`.
std::string tail_utf8(std::string_view text, std::size_t max_bytes, bool& cut);

// Without leading and trailing spaces, tabs and line breaks.
std::string trim_space(std::string_view text);

// A log line without the carriage returns that end it (a CRLF line, or a
// progress line that ends in '\r'): the line ending, not its text. A CR
// inside the line stays, for escape_for_terminal to show.
std::string without_trailing_cr(std::string_view line);

}  // namespace lazyagent
