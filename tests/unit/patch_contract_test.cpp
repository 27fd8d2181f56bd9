// Patch contract: every reason code, the order of findings, exact messages
// where users read them, and the hostile inputs (lone surrogates, overlongs,
// control bytes, deep nesting) that must never escape as anything but a finding.
#include "contract/patch_contract.h"

#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace lazyagent;

namespace {

using CodePath = std::pair<std::string, std::string>;

ContractLimits limits(std::vector<std::string> allow = {"calculator.py"}) {
  ContractLimits l;
  l.allow = std::move(allow);
  return l;
}

std::vector<CodePath> code_paths(const std::vector<Finding>& findings) {
  std::vector<CodePath> out;
  for (const Finding& f : findings) out.emplace_back(f.code, f.path);
  return out;
}

// {"files":[{"path":<path>,"content":<content>}]} with the two given raw JSON fragments.
std::string one_file(const std::string& path_json, const std::string& content_json) {
  return R"({"files":[{"path":)" + path_json + R"(,"content":)" + content_json + "}]}";
}

ContractResult check(const std::string& json, const ContractLimits& l = limits()) {
  return validate_patch_json(json, l);
}

const std::string kFixed = "def add(a: float, b: float) -> float:\n    return a + b\n";

}  // namespace

TEST_CASE("a valid fixing patch is accepted and parsed", "[patch_contract]") {
  const auto r = check(one_file(R"("calculator.py")",
                                R"("def add(a: float, b: float) -> float:\n    return a + b\n")"));
  REQUIRE(r.ok());
  REQUIRE(r.patch.files.size() == 1);
  CHECK(r.patch.files[0].path == "calculator.py");
  CHECK(r.patch.files[0].content == kFixed);
}

TEST_CASE("whitespace, escapes and surrogate pairs are read per RFC 8259", "[patch_contract]") {
  const auto r = check(
      " {\n \"files\" : [ {\"content\":\"tab\\there \\u00e9 \\ud83d\\ude00 \\/\","
      "\"path\":\"calculator.py\"} ] }\r\n");
  REQUIRE(r.ok());
  CHECK(r.patch.files[0].content == "tab\there \xc3\xa9 \xf0\x9f\x98\x80 /");
}

TEST_CASE("malformed_json: exact messages with line and column", "[patch_contract]") {
  auto only = [](const std::string& json) {
    const auto r = check(json);
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].code == "malformed_json");
    CHECK(r.findings[0].path.empty());
    return r.findings[0].message;
  };
  CHECK(only(R"({"files":[)") ==
        "patch is not valid JSON: unexpected end of input at line 1, column 11.");
  CHECK(only("") == "patch is not valid JSON: unexpected end of input at line 1, column 1.");
  CHECK(only("{\"files\":[]}\n x") ==
        "patch is not valid JSON: unexpected text after the JSON value at line 2, column 2.");
  CHECK(only(R"({"files":[],})") ==
        "patch is not valid JSON: expected a string key at line 1, column 13.");
  CHECK(only("{\"files\":[{\"path\":\"a\x01\"}]}") ==
        "patch is not valid JSON: unescaped control character in a string at line 1, column 21.");
  CHECK(only(R"({"files":[{"path":"a\q"}]})") ==
        "patch is not valid JSON: invalid escape sequence at line 1, column 22.");
  CHECK(only("{\"files\":\xff}") ==
        "patch is not valid JSON: unexpected byte \\xff at line 1, column 10.");
  CHECK(only(R"({"files":[01]})") ==
        "patch is not valid JSON: expected ',' or ']' at line 1, column 12.");
}

TEST_CASE("bad_shape: the document's shape", "[patch_contract]") {
  auto messages = [](const std::string& json) {
    std::vector<std::string> out;
    for (const Finding& f : check(json).findings) {
      CHECK(f.code == "bad_shape");
      out.push_back(f.message);
    }
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(messages("[]") == V{"patch must be a JSON object with a 'files' array, got an array."});
  CHECK(messages("{}") == V{"patch has no 'files' array."});
  CHECK(messages(R"({"files":{}})") == V{"'files' must be an array, got an object."});
  CHECK(messages(R"({"files":["calculator.py"]})") ==
        V{"files[0] must be an object, got a string."});
  CHECK(messages(R"({"files":[{"path":1,"content":null}]})") ==
        V{"files[0].path must be a string, got a number.",
          "files[0].content must be a string, got null."});
  CHECK(messages(R"({"files":[{"content":""}]})") == V{"files[0] has no 'path'."});
  const auto twice = check(R"({"files":[],"files":[]})").findings;
  CHECK(code_paths(twice) == std::vector<CodePath>{{"bad_shape", ""}, {"no_files", ""}});
  CHECK(twice[0].message == "patch has the key 'files' more than once.");
}

TEST_CASE("bad_shape: unknown keys are refused but every other rule still runs",
          "[patch_contract]") {
  const auto r =
      check(R"({"note":"hi","files":[{"path":"calculator.py","content":"x","mode":"755"}]})");
  CHECK(code_paths(r.findings) ==
        std::vector<CodePath>{{"bad_shape", ""}, {"bad_shape", "calculator.py"}});
  CHECK(r.findings[0].message == "patch has unknown key 'note' (allowed: files).");
  CHECK(r.findings[1].message == "files[0] has unknown key 'mode' (allowed: path, content).");
  REQUIRE(r.patch.files.size() == 1);  // the usable part is still parsed
}

TEST_CASE("bad_shape: hostile nesting is refused without recursion", "[patch_contract]") {
  const std::string deep = R"({"files":[{"path":"calculator.py","content":"x","x":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}]}";
  const auto r = check(deep);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].code == "bad_shape");
  CHECK(r.findings[0].message ==
        "patch is not valid JSON: nested more than 16 levels deep at line 1, column 66.");
}

TEST_CASE("no_files", "[patch_contract]") {
  const auto r = check(R"({"files":[]})");
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].code == "no_files");
  CHECK(r.findings[0].message == "patch has no files.");
}

TEST_CASE("invalid_utf8: raw bytes, overlongs and lone surrogates name the file",
          "[patch_contract]") {
  SECTION("raw invalid byte in content") {
    const auto r = check(one_file(R"("calculator.py")", "\"ok \xff\""));
    CHECK(code_paths(r.findings) == std::vector<CodePath>{{"invalid_utf8", "calculator.py"}});
    CHECK(r.findings[0].message == "content of 'calculator.py' is not valid UTF-8 at byte 3.");
  }
  SECTION("lone high surrogate escape in content") {
    const auto r = check(one_file(R"("calculator.py")", R"("x\ud800y")"));
    CHECK(code_paths(r.findings) == std::vector<CodePath>{{"invalid_utf8", "calculator.py"}});
    CHECK(
        r.findings[0].message ==
        "content of 'calculator.py' is not valid UTF-8 at byte 1 (an unpaired UTF-16 surrogate).");
  }
  SECTION("lone low surrogate, and a high surrogate followed by a non-surrogate") {
    CHECK(code_paths(check(one_file(R"("calculator.py")", R"("\udc00")")).findings) ==
          std::vector<CodePath>{{"invalid_utf8", "calculator.py"}});
    const auto r = check(one_file(R"("calculator.py")", R"("\ud800\u0041")"));
    CHECK(code_paths(r.findings) == std::vector<CodePath>{{"invalid_utf8", "calculator.py"}});
    CHECK(r.patch.files[0].content ==
          "\xed\xa0\x80"
          "A");
  }
  SECTION("overlong encoding of '/' in a path") {
    const auto r = check(one_file("\"calculator\xc0\xafpy\"", R"("x")"));
    REQUIRE(r.findings.size() == 2);
    CHECK(r.findings[0].code == "invalid_utf8");
    CHECK(r.findings[0].path == "calculator\\xc0\\xafpy");
    CHECK(r.findings[0].message == "path 'calculator\\xc0\\xafpy' is not valid UTF-8 at byte 10.");
    CHECK(r.findings[1].code == "not_allowed");
  }
}

TEST_CASE("is_valid_utf8", "[patch_contract]") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  CHECK_FALSE(is_valid_utf8("\xc0\x80"));          // overlong NUL
  CHECK_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  CHECK_FALSE(is_valid_utf8("\x80"));              // stray continuation
}

TEST_CASE("path rules, one reason code each", "[patch_contract]") {
  auto findings_for = [](const std::string& path_json) {
    return code_paths(
        check(one_file(path_json, R"("x")"), limits({"calculator.py", "pkg/"})).findings);
  };
  using V = std::vector<CodePath>;
  CHECK(findings_for(R"("")") == V{{"empty_path", ""}});
  CHECK(findings_for(R"("/etc/passwd")") ==
        V{{"absolute_path", "/etc/passwd"}, {"not_allowed", "/etc/passwd"}});
  CHECK(findings_for(R"("pkg/../calculator.py")") == V{{"dot_component", "pkg/../calculator.py"}});
  CHECK(findings_for(R"("pkg/./a.py")") == V{{"dot_component", "pkg/./a.py"}});
  CHECK(findings_for(R"("pkg//a.py")") == V{{"dot_component", "pkg//a.py"}});
  CHECK(findings_for(R"("pkg/sub/")") == V{{"dot_component", "pkg/sub/"}});
  CHECK(findings_for(R"("pkg\\a.py")") ==
        V{{"backslash_in_path", "pkg\\\\a.py"}, {"not_allowed", "pkg\\\\a.py"}});
  CHECK(findings_for(R"("pkg/a\u0001.py")") == V{{"control_char_in_path", "pkg/a\\x01.py"}});
  CHECK(findings_for(R"("pkg/a\u007f.py")") == V{{"control_char_in_path", "pkg/a\\x7f.py"}});
  CHECK(findings_for(R"("pkg/a\u0085.py")") == V{{"control_char_in_path", "pkg/a\\u{85}.py"}});
}

TEST_CASE("path rule messages", "[patch_contract]") {
  auto message = [](const std::string& path) { return check_patch_path(path).at(0).message; };
  CHECK(message("") == "path is empty.");
  CHECK(message("/etc/passwd") ==
        "path '/etc/passwd' is absolute; paths must be relative to the seed.");
  CHECK(message("a/../b") == "path 'a/../b' has a '..' component.");
  CHECK(message("a//b") == "path 'a//b' has an empty component ('//' or a trailing '/').");
  CHECK(message("a\\b") == "path 'a\\\\b' contains a backslash; separate components with '/'.");
  CHECK(message("a\x1b[2Jb") == "path 'a\\x1b[2Jb' contains control character \\x1b.");
  CHECK(message("a\nb") == "path 'a\\x0ab' contains control character \\x0a.");
  CHECK(check_patch_path("pkg/sub/a.py").empty());
}

TEST_CASE("control_char_in_content: tab, newline and CR pass, but C0, DEL and C1 do not",
          "[patch_contract]") {
  CHECK(check(one_file(R"("calculator.py")", R"("a\tb\r\nc\n")")).ok());
  const auto r = check(one_file(R"("calculator.py")", R"("ok\n\u001b[31m\u007f\u009b")"));
  CHECK(code_paths(r.findings) ==
        std::vector<CodePath>{{"control_char_in_content", "calculator.py"}});
  CHECK(r.findings[0].message ==
        "content of 'calculator.py' contains 3 control characters, the first \\x1b at byte 3.");
  const auto one = check(one_file(R"("calculator.py")", R"("x\u0000")"));
  CHECK(one.findings.at(0).message ==
        "content of 'calculator.py' contains control character \\x00 at byte 1.");
}

TEST_CASE("duplicate_path and not_allowed", "[patch_contract]") {
  const auto r =
      check(R"({"files":[{"path":"calculator.py","content":"a"},)"
            R"({"path":"setup.py","content":"b"},{"path":"calculator.py","content":"c"}]})");
  CHECK(code_paths(r.findings) ==
        std::vector<CodePath>{{"not_allowed", "setup.py"}, {"duplicate_path", "calculator.py"}});
  CHECK(r.findings[0].message == "path 'setup.py' is not allowed; allowed: calculator.py.");
  CHECK(r.findings[1].message ==
        "path 'calculator.py' appears more than once (first as files[0]).");
  CHECK(check(one_file(R"("calculator.py")", R"("x")"), limits({})).findings.at(0).message ==
        "path 'calculator.py' is not allowed; the allowlist is empty.");
}

TEST_CASE("allow entries ending in '/' allow everything beneath, nothing else",
          "[patch_contract]") {
  const ContractLimits l = limits({"pkg/", "calculator.py"});
  auto allowed = [&](const std::string& path) {
    return validate_patch(Patch{{{path, "x"}}}, l).empty();
  };
  CHECK(allowed("pkg/a.py"));
  CHECK(allowed("pkg/sub/b.py"));
  CHECK(allowed("calculator.py"));
  CHECK_FALSE(allowed("pkg"));
  CHECK_FALSE(allowed("pkgx/a.py"));
  CHECK_FALSE(allowed("calculator.py/x"));
  CHECK_FALSE(allowed("calculator.pyc"));
}

TEST_CASE("too_many_files and too_large: defaults, raised limits, clamped to the hard caps", "[patch_contract]") {
  const Patch four{{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}};
  const auto many = validate_patch(four, limits({"a", "b", "c", "d"}));  // the default: 3 files
  REQUIRE(many.size() == 1);
  CHECK(many[0].code == "too_many_files");
  CHECK(many[0].message ==
        "patch has 4 files; the limit is 3 (patch.max_files in the config, which can be raised up to 1000).");

  const Patch big{{{"a", std::string(12001, 'x')}}};
  const auto large = validate_patch(big, limits({"a"}));
  REQUIRE(large.size() == 1);
  CHECK(large[0].code == "too_large");
  CHECK(large[0].message ==
        "patch content totals 12001 bytes; the limit is 12000 (patch.max_bytes in the config, which can be raised "
        "up to 4194304).");
  CHECK(validate_patch(Patch{{{"a", std::string(12000, 'x')}}}, limits({"a"})).empty());

  ContractLimits raised = limits({"a", "b", "c", "d"});  // raising works
  raised.max_files = 4;
  raised.max_bytes = 30000;
  CHECK(validate_patch(four, raised).empty());
  CHECK(validate_patch(Patch{{{"a", std::string(27617, 'x')}}}, raised).empty());

  ContractLimits past = limits({"d/"});  // past the hard caps: clamped to them
  past.max_files = 5000;
  past.max_bytes = std::size_t{1} << 40;
  Patch thousand_and_one;
  for (int i = 0; i <= 1000; ++i) thousand_and_one.files.push_back({"d/" + std::to_string(i), "x"});
  const auto clamped = validate_patch(thousand_and_one, past);
  REQUIRE(clamped.size() == 1);
  CHECK(clamped[0].message ==
        "patch has 1001 files; the limit is 1000 (patch.max_files in the config, which can be raised up to 1000).");

  ContractLimits strict = limits({"a", "b"});  // lowering works
  strict.max_files = 1;
  strict.max_bytes = 10;
  CHECK(code_paths(validate_patch(Patch{{{"a", "12345"}, {"b", "678901"}}}, strict)) ==
        std::vector<CodePath>{{"too_many_files", ""}, {"too_large", ""}});
}

TEST_CASE("oversized patch text is refused before parsing", "[patch_contract]") {
  const auto r = check(std::string(2 * 1024 * 1024, ' '));
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].code == "too_large");
  CHECK(r.findings[0].message ==
        "patch text is 2097152 bytes; the limit is 262144 (6 times patch.max_bytes, at least 262144).");
}

TEST_CASE("several findings at once are all reported, in file then rule order",
          "[patch_contract]") {
  const auto r = check(R"({"files":[)"
                       R"({"path":"/etc/cron.d/x","content":"\u0000"},)"
                       R"({"path":"calculator.py","content":"ok"},)"
                       R"({"path":"calculator.py","content":"\ud800"},)"
                       R"({"path":"../y","content":"z"}]})");
  CHECK(code_paths(r.findings) == std::vector<CodePath>{
                                      {"absolute_path", "/etc/cron.d/x"},
                                      {"not_allowed", "/etc/cron.d/x"},
                                      {"control_char_in_content", "/etc/cron.d/x"},
                                      {"duplicate_path", "calculator.py"},
                                      {"invalid_utf8", "calculator.py"},
                                      {"dot_component", "../y"},
                                      {"not_allowed", "../y"},
                                      {"too_many_files", ""},
                                  });
  CHECK(r.patch.files.size() == 4);
}

TEST_CASE("validate_patch agrees with validate_patch_json", "[patch_contract]") {
  const std::string json =
      R"({"files":[{"path":"a/../b","content":"\u0007"},{"path":"c","content":""}]})";
  const auto r = check(json);
  CHECK(code_paths(validate_patch(r.patch, limits())) == code_paths(r.findings));
}

TEST_CASE("messages never carry raw control bytes, and long paths are cut", "[patch_contract]") {
  const std::string hostile = "\x1b]52;c;AAAA\x07\r\n\xc2\x9b\xe2\x80\xae" + std::string(1000, 'p');
  for (const Finding& f : validate_patch(Patch{{{hostile, "\x1b[2J"}}}, limits())) {
    for (const std::string* s : {&f.message, &f.path}) {
      for (const char c : *s) {
        const auto b = static_cast<unsigned char>(c);
        CHECK((b >= 0x20 && b != 0x7f));
      }
    }
    CHECK(f.message.size() < 400);
    CHECK(f.message.find("\xc2\x9b") == std::string::npos);
    CHECK(f.message.find("\xe2\x80\xae") == std::string::npos);
  }
}

TEST_CASE("patch_to_json is stable, round-trips, and patch_sha256 is its hash",
          "[patch_contract]") {
  const Patch p{{{"calculator.py", kFixed}}};
  CHECK(
      patch_to_json(p) ==
      R"({"files":[{"path":"calculator.py","content":"def add(a: float, b: float) -> float:\n    return a + b\n"}]})");
  CHECK(patch_sha256(p) == "3d9a775dbbb6b2b1ec4ccbd036ed185ff79cf0fc7a09348b3293ed2e81dac71f");
  CHECK(patch_sha256(p) == patch_sha256(check(patch_to_json(p)).patch));
  CHECK(patch_sha256(p) != patch_sha256(Patch{{{"calculator.py", kFixed + " "}}}));

  const Patch tricky{{{"calculator.py", "q\"\\\b\f\n\r\t\x01\x7f\xc3\xa9"}}};
  const auto again = check(patch_to_json(tricky));
  REQUIRE(again.patch.files.size() == 1);
  CHECK(again.patch.files[0].content == tricky.files[0].content);
  const auto parsed = nlohmann::json::parse(patch_to_json(tricky));  // standard JSON too
  CHECK(parsed["files"][0]["content"].get<std::string>() == tricky.files[0].content);
}

TEST_CASE("mutated patches never throw and yield only known reason codes", "[patch_contract]") {
  const std::set<std::string> known = {"malformed_json",
                                       "bad_shape",
                                       "no_files",
                                       "invalid_utf8",
                                       "empty_path",
                                       "absolute_path",
                                       "dot_component",
                                       "backslash_in_path",
                                       "control_char_in_path",
                                       "control_char_in_content",
                                       "duplicate_path",
                                       "not_allowed",
                                       "too_many_files",
                                       "too_large",
                                       "bidi_control_in_path",
                                       "invisible_char_in_path",
                                       "bidi_control_in_content",
                                       "invisible_char_in_content"};
  const std::string seed =
      R"({"files":[{"path":"calculator.py","content":"a\u00e9\ud83d\ude00\n"}]})";
  std::uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int i = 0; i < 3000; ++i) {
    std::string s = seed;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = next() % s.size();
      const char b = static_cast<char>(next() >> 24);
      switch (next() % 3) {
        case 0: s[at] = b; break;
        case 1: s.insert(s.begin() + static_cast<long>(at), b); break;
        default: s.erase(at, 1);
      }
    }
    ContractResult r;
    REQUIRE_NOTHROW(r = validate_patch_json(s, limits()));
    for (const Finding& f : r.findings) REQUIRE(known.count(f.code) == 1);
  }
}
