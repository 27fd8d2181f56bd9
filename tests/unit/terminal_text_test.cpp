#include "catch_compat.h"

#include "util/terminal_text.h"

using namespace lazyagent;

TEST_CASE("escape_for_terminal shows control sequences instead of sending them") {
  CHECK(escape_for_terminal("ok\n\tindent") == "ok\n\tindent");
  CHECK(escape_for_terminal("\x1b]0;pwned\x07title") == "\\x1b]0;pwned\\x07title");
  CHECK(escape_for_terminal("\x1b[2J") == "\\x1b[2J");
  CHECK(escape_for_terminal("FAILED\rOK    ") == "FAILED\\rOK    ");
  CHECK(escape_for_terminal("line\r\nnext") == "line\nnext");
  CHECK(escape_for_terminal("del\x7f") == "del\\x7f");
  CHECK(escape_for_terminal("\xc2\x9b" "31m") == "\\u{9b}31m");   // C1 CSI
  CHECK(escape_for_terminal("a\xe2\x80\xae" "b") == "a\\u{202e}b");  // RLO
  CHECK(escape_for_terminal("bad\xff\xfe") == "bad\\xff\\xfe");
  CHECK(escape_for_terminal("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST_CASE("escaped output never contains a raw control byte") {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string e = escape_for_terminal(all);
  for (unsigned char c : e) {
    if (c == '\n' || c == '\t') continue;
    CHECK((c >= 0x20 && c != 0x7f));
  }
}

TEST_CASE("to_valid_utf8 replaces invalid bytes") {
  CHECK(to_valid_utf8("ok") == "ok");
  CHECK(to_valid_utf8("a\xff" "b") == "a\xef\xbf\xbd" "b");
  CHECK(to_valid_utf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
}

TEST_CASE("truncate_utf8 never splits a character") {
  bool cut = false;
  CHECK(truncate_utf8("abc", 5, cut) == "abc");
  CHECK_FALSE(cut);
  CHECK(truncate_utf8("ab\xc3\xa9", 3, cut) == "ab");
  CHECK(cut);
}

TEST_CASE("a log line's trailing carriage returns are its line ending, dropped, one inside stays") {
  CHECK(without_trailing_cr("Get:1 http://mirror.example.net bookworm InRelease\r") ==
        "Get:1 http://mirror.example.net bookworm InRelease");
  CHECK(without_trailing_cr("progress 10%\rprogress 100%\r\r") == "progress 10%\rprogress 100%");
  CHECK(escape_for_terminal(without_trailing_cr("FAILED\rOK\r")) == "FAILED\\rOK");
  CHECK(without_trailing_cr("plain") == "plain");
  CHECK(without_trailing_cr("\r") == "");
}
