// Invariant 8: untrusted output is bounded and escaped before it reaches a
// terminal. Beyond attack_test.cpp's ESC/OSC sequences: 8-bit C1 controls
// (U+009B is a CSI on many terminals), invalid UTF-8, a bare carriage
// return over a fake verdict, and hostile bytes in a path that lands in an
// error message. The control is the raw JSON field: the sandbox really did
// emit those bytes, so their absence on the terminal is the escaping.
#include <unistd.h>

#include <filesystem>

#include "attack_common.h"

using nlohmann::json;
using namespace it;
using namespace sec;
namespace fs = std::filesystem;

namespace {

bool has_c0_or_c1(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("attack: C1 controls, invalid UTF-8 and a carriage-return forgery in output", "[attack][terminal]") {
  TempDir state, dir;
  const std::string prelude =
      "import sys\n"
      "sys.stdout.buffer.write(b'C1CSI \\xc2\\x9b2J OSC8 \\x1b]8;;http://evil/\\x1b\\\\link\\x1b]8;;\\x1b\\\\ BAD \\xff\\xfe\\xc0\\xaf "
      "DEL \\x7f BELL \\x07\\nFAKE\\rPASSED all 999 tests\\n')\n"
      "sys.stdout.flush()\n";
  const std::string p = dir.file("patch.json", attack_patch(prelude));
  CliResult human = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p});
  CliResult raw = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p, "--json"});
  INFO(human.out);
  json j = json::parse(raw.out, nullptr, false);
  REQUIRE(j.is_object());
  const std::string out = j["test_output"];
  // Control: the sandbox's bytes really contain the controls (as valid UTF-8).
  CHECK(has(out, "\xc2\x9b"));
  CHECK(has(out, "\x1b]8;;"));
  CHECK(has(out, "FAKE\rPASSED"));
  // The terminal gets none of them.
  CHECK(human.exit_code == 0);
  CHECK_FALSE(has_c0_or_c1(human.out));
  CHECK_FALSE(has_c0_or_c1(human.err));
  CHECK(has(human.out, "FAKE\\rPASSED all 999 tests"));
  CHECK(has(human.out, "\\x1b]8;;http://evil/"));
  evidence("terminal shows: " + lines_with(human.out, "C1CSI") + " / " + lines_with(human.out, "FAKE"));
}

TEST_CASE("attack: escape sequences in a path that lands in an error message", "[attack][terminal][quick]") {
  TempDir state, dir;
  const std::string evil = dir.path() + "/seed\x1b]0;owned\x07\x1b[2J";
  CliResult r = run_cli({state.path()}, {"test", "--seed", evil, "--patch", dir.file("p.json", fixing_patch())});
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK_FALSE(has(r.err, "\x1b"));
  CHECK_FALSE(has(r.err, "\x07"));
  CHECK(has(r.err, "\\x1b]0;owned\\x07"));
  evidence("stderr: " + r.err.substr(0, 300));
}
