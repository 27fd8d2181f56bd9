// Patch contract: text that reads differently from what runs (Trojan Source,
// CVE-2021-42574). Each code point family is refused with the file, the line
// and the column; a leading BOM, joiners inside non-ASCII text and every
// legit non-ASCII identifier, string and comment pass.
#include "contract/patch_contract.h"

#include "catch_compat.h"

#include <string>
#include <utility>
#include <vector>

#include "util/utf8.h"

using namespace lazyagent;

namespace {

ContractLimits allow_all() {
  ContractLimits l;
  l.allow = {"calculator.py", "pkg/"};
  return l;
}

std::string utf8(long cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

std::vector<Finding> content_findings(const std::string& content, const std::string& path = "calculator.py") {
  return validate_patch(Patch{{{path, content}}}, allow_all());
}

using CodeLine = std::pair<std::string, std::size_t>;
std::vector<CodeLine> code_lines(const std::vector<Finding>& fs) {
  std::vector<CodeLine> out;
  for (const Finding& f : fs) out.emplace_back(f.code, f.line);
  return out;
}

// The Trojan Source paper's "early return" example, with U+202E/U+2066/U+2069.
const std::string kEarlyReturn =
    "def is_admin(user):\n"
    "    access_level = 'user'\n"
    "    if access_level != 'none\xe2\x80\xae\xe2\x81\xa6': # Check if admin\xe2\x81\xa9\xe2\x81\xa6' and access_level != 'user\n"
    "        return True\n"
    "    return False\n";

}  // namespace

TEST_CASE("bidi_control_in_content: every embedding, override and isolate, with line and column",
          "[patch_contract][hidden_text]") {
  for (long cp : {0x202aL, 0x202bL, 0x202cL, 0x202dL, 0x202eL, 0x2066L, 0x2067L, 0x2068L, 0x2069L}) {
    INFO("U+" << std::hex << cp);
    const auto fs = content_findings("x = 1\ny = 'ab" + utf8(cp) + "c'\n");
    REQUIRE(code_lines(fs) == std::vector<CodeLine>{{"bidi_control_in_content", 2}});
    CHECK(fs[0].path == "calculator.py");
    CHECK(fs[0].message.find(" at line 2, column 8: ") != std::string::npos);
  }
}

TEST_CASE("bidi_control_in_content: exact messages, one and several", "[patch_contract][hidden_text]") {
  const auto one = content_findings("x = '\xe2\x80\xae'\n");
  REQUIRE(one.size() == 1);
  CHECK(one[0].message ==
        "content of 'calculator.py' contains bidirectional control U+202E (RIGHT-TO-LEFT OVERRIDE) at "
        "line 1, column 6: they make code display in an order other than the one it runs in (Trojan "
        "Source, CVE-2021-42574).");
  const auto many = content_findings(kEarlyReturn);
  REQUIRE(code_lines(many) == std::vector<CodeLine>{{"bidi_control_in_content", 3}});
  CHECK(many[0].message ==
        "content of 'calculator.py' contains 4 bidirectional controls, the first U+202E (RIGHT-TO-LEFT "
        "OVERRIDE) at line 3, column 29: they make code display in an order other than the one it runs "
        "in (Trojan Source, CVE-2021-42574).");
  const auto lines = content_findings("a\n\xe2\x81\xa7\nb\n\nc\xe2\x81\xa9\n");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].message.find("2 bidirectional controls, the first U+2067 (RIGHT-TO-LEFT ISOLATE) at line "
                              "2, column 1 (on lines 2, 5)") != std::string::npos);
}

TEST_CASE("hidden text is refused by the JSON path too (both validations run it), escaped or raw",
          "[patch_contract][hidden_text]") {
  const auto escaped = validate_patch_json(
      R"({"files":[{"path":"calculator.py","content":"ok\nx = '\u202e'\n"}]})", allow_all());
  REQUIRE(escaped.findings.size() == 1);
  CHECK(escaped.findings[0].code == "bidi_control_in_content");
  CHECK(escaped.findings[0].line == 2);
  const auto raw = validate_patch_json(
      "{\"files\":[{\"path\":\"calculator.py\",\"content\":\"x = '\xe2\x81\xa6'\"}]}", allow_all());
  REQUIRE(raw.findings.size() == 1);
  CHECK(raw.findings[0].code == "bidi_control_in_content");
  // The finding's line reaches the JSON the result and the planner's log carry.
  const nlohmann::json j = findings_to_json(escaped.findings);
  CHECK(j.dump() ==
        R"([{"code":"bidi_control_in_content","line":2,"message":")" + escaped.findings[0].message +
            R"(","path":"calculator.py"}])");
  const auto back = findings_from_json(j);
  REQUIRE(back.size() == 1);
  CHECK(back[0].line == 2);
  CHECK(back[0].message == escaped.findings[0].message);
}

TEST_CASE("invisible_char_in_content: zero width space, direction marks, separators, joiners, BOM",
          "[patch_contract][hidden_text]") {
  for (long cp : {0x200bL, 0x200eL, 0x200fL, 0x061cL, 0x2028L, 0x2029L, 0x2060L, 0x2061L, 0x2062L,
                  0x2063L, 0x2064L, 0xfeffL, 0x200cL, 0x200dL}) {
    INFO("U+" << std::hex << cp);
    const auto fs = content_findings("import os\nis_admin" + utf8(cp) + " = False\n");
    REQUIRE(code_lines(fs) == std::vector<CodeLine>{{"invisible_char_in_content", 2}});
    CHECK(fs[0].message.find(" at line 2, column 9: ") != std::string::npos);
  }
  const auto zwsp = content_findings("x\xe2\x80\x8b = 1\n");
  REQUIRE(zwsp.size() == 1);
  CHECK(zwsp[0].message ==
        "content of 'calculator.py' contains invisible character U+200B (ZERO WIDTH SPACE) at line 1, "
        "column 2: code can read differently from what runs; a string that needs one can spell it as "
        "an escape (\\u200b).");
  // U+2028 in a comment: one line to Python, two in some viewers.
  const auto ls = content_findings("# harmless comment\xe2\x80\xa8import os; os.system('x')\n");
  REQUIRE(ls.size() == 1);
  CHECK(ls[0].message.find("U+2028 (LINE SEPARATOR)") != std::string::npos);
}

TEST_CASE("a leading BOM passes, a BOM anywhere else is refused", "[patch_contract][hidden_text]") {
  CHECK(content_findings("\xef\xbb\xbf" "def add(a, b):\n    return a + b\n").empty());
  const auto second = content_findings("\xef\xbb\xbf" "x = 1\n\xef\xbb\xbfy = 2\n");
  REQUIRE(code_lines(second) == std::vector<CodeLine>{{"invisible_char_in_content", 2}});
  CHECK(second[0].message.find("U+FEFF (ZERO WIDTH NO-BREAK SPACE) at line 2, column 1") != std::string::npos);
  CHECK_FALSE(content_findings(" \xef\xbb\xbf").empty());  // not first: refused
}

TEST_CASE("joiners between non-ASCII characters are text: emoji sequences and Persian words pass",
          "[patch_contract][hidden_text]") {
  // family: man ZWJ woman ZWJ girl; heart on fire: U+2764 U+FE0F ZWJ U+1F525
  CHECK(content_findings("FAMILY = '\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7'\n").empty());
  CHECK(content_findings("HEART = '\xe2\x9d\xa4\xef\xb8\x8f\xe2\x80\x8d\xf0\x9f\x94\xa5'\n").empty());
  // Persian "mi-khaham" (I want): ZWNJ between two Arabic-script letters
  CHECK(content_findings("WANT = '\xd9\x85\xdb\x8c\xe2\x80\x8c\xd8\xae\xd9\x88\xd8\xa7\xd9\x87\xd9\x85'\n").empty());
  // ... but not next to ASCII, and not at the end of the text
  CHECK_FALSE(content_findings("x = '\xd9\x85\xe2\x80\x8c'\n").empty());
  CHECK_FALSE(content_findings("\xe2\x80\x8d").empty());
}

TEST_CASE("legit non-ASCII identifiers, strings and comments pass", "[patch_contract][hidden_text]") {
  const std::string content =
      "# Ünïcödé comment: 计算器, калькулятор\n"
      "π = 3.14159\n"
      "café = 'crème brûlée'\n"
      "def 加(a: float, b: float) -> float:\n"
      "    return a + b\n"
      "GREETING_HE = 'שלום עולם'  # right-to-left letters, no controls\n"
      "GREETING_AR = 'مرحبا بالعالم'\n"
      "SMILE = '😀 👍🏽'\n"
      "NBSP = 'a\u00a0b'\n"
      "ESCAPED = '\\u202e \\u200b'  # escapes are ASCII\n";
  CHECK(content_findings(content).empty());
  CHECK(validate_patch_json(patch_to_json(Patch{{{"calculator.py", content}}}), allow_all()).ok());
  CHECK(check_patch_path("pkg/café_计算.py").empty());
}

TEST_CASE("bidi and invisible characters in paths", "[patch_contract][hidden_text]") {
  const auto bidi = check_patch_path("pkg/calc\xe2\x80\xaeyp.py");
  REQUIRE(bidi.size() == 1);
  CHECK(bidi[0].code == "bidi_control_in_path");
  CHECK(bidi[0].path == "pkg/calc\\u{202e}yp.py");
  CHECK(bidi[0].message ==
        "path 'pkg/calc\\u{202e}yp.py' contains bidirectional control U+202E (RIGHT-TO-LEFT OVERRIDE): it "
        "would display in an order other than its own.");
  for (long cp : {0x200bL, 0x200cL, 0x200dL, 0x200eL, 0x2028L, 0x2060L, 0xfeffL}) {
    INFO("U+" << std::hex << cp);
    const auto fs = check_patch_path("pkg/a" + utf8(cp) + ".py");
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].code == "invisible_char_in_path");
  }
  CHECK(check_patch_path("\xef\xbb\xbfpkg/a.py").at(0).code == "invisible_char_in_path");  // no BOM in paths
}

TEST_CASE("hidden-text findings come after the other content rules, one per rule and file",
          "[patch_contract][hidden_text]") {
  const auto fs = validate_patch(
      Patch{{{"calculator.py", "\x01 \xe2\x80\x8b \xe2\x80\xae \xe2\x80\x8b"}, {"pkg/b.py", "\xe2\x81\xa6"}}},
      allow_all());
  std::vector<std::pair<std::string, std::string>> got;
  for (const Finding& f : fs) got.emplace_back(f.code, f.path);
  CHECK(got == std::vector<std::pair<std::string, std::string>>{
                   {"control_char_in_content", "calculator.py"},
                   {"bidi_control_in_content", "calculator.py"},
                   {"invisible_char_in_content", "calculator.py"},
                   {"bidi_control_in_content", "pkg/b.py"},
               });
}
