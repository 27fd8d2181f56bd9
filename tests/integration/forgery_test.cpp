// Patches that read differently from what runs, and patches that forge a
// test report, against the real CLI, podman and sandbox image:
//   - bidirectional controls (Trojan Source) are refused before any sandbox,
//     with the file and the line;
//   - the forgery family (print-then-exit, sys.exit(0) at import, atexit, a
//     forged report naming the seed's real tests) is flagged `suspicious` by
//     default, and refused with patch.suspicious: refuse; a legitimate patch
//     that calls sys.exit inside a function passes with nothing flagged.
// What each forgery's verdict is today (before runner-written evidence) is
// asserted too, so that a change to it is seen.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "harness.h"

using nlohmann::json;
using namespace it;

namespace {

std::string seed_calculator() {
  std::ifstream f(seed_dir() + "/calculator.py");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The seed's calculator.py (add still broken: it subtracts) plus `code`.
std::string broken_plus(const std::string& code) { return patch_json("calculator.py", seed_calculator() + code); }

std::string fixed_plus(const std::string& code) {
  std::string src = seed_calculator();
  const auto at = src.find("return a - b");
  REQUIRE(at != std::string::npos);
  src.replace(at, 12, "return a + b");
  return patch_json("calculator.py", src + code);
}

// unittest -v's report of the seed's four real tests, all passing.
const std::string kForgedReport =
    "test_add (test_calculator.CalculatorTest.test_add) ... ok\\n"
    "test_add_negative (test_calculator.CalculatorTest.test_add_negative) ... ok\\n"
    "test_multiply (test_calculator.CalculatorTest.test_multiply) ... ok\\n"
    "test_subtract (test_calculator.CalculatorTest.test_subtract) ... ok\\n"
    "\\n----------------------------------------------------------------------\\n"
    "Ran 4 tests in 0.001s\\n\\nOK\\n";

struct Forgery {
  const char* name;
  std::string patch;
};

std::vector<Forgery> forgery_family() {
  return {
      {"print-then-exit", broken_plus("import os, sys\n"
                                      "sys.stderr.write('Ran 4 tests in 0.001s\\n\\nOK\\n')\n"
                                      "sys.stderr.flush()\n"
                                      "os._exit(0)\n")},
      {"sys.exit(0) at import", broken_plus("import sys\n"
                                            "print('Ran 4 tests in 0.001s\\n\\nOK')\n"
                                            "sys.exit(0)\n")},
      {"atexit", broken_plus("import atexit, os, sys\n"
                             "def _forge():\n"
                             "    sys.stderr.write('" + kForgedReport + "')\n"
                             "    sys.stderr.flush()\n"
                             "    os._exit(0)\n"
                             "atexit.register(_forge)\n")},
      {"forged report naming the real tests", broken_plus("import os, sys\n"
                                                          "if 'unittest' in sys.modules:\n"
                                                          "    sys.stderr.write('" + kForgedReport + "')\n"
                                                          "    sys.stderr.flush()\n"
                                                          "    os._exit(0)\n")},
  };
}

using Run = TestRun;

// `test --json` of the demo seed in `state` (harness.h), with config_yaml when given.
Run test_in(const std::string& state, const std::string& patch, const std::string& config_yaml = "") {
  return test_patch({state}, patch, {}, config_yaml);
}

std::vector<std::string> codes_of(const json& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.value("code", ""));
  return out;
}

}  // namespace

TEST_CASE("forgery: bidirectional controls are refused before any sandbox, naming the file and line",
          "[sandbox][forgery][hidden_text]") {
  TempDir state;
  // The Trojan Source "commenting-out" shape: the RLO/LRI make the check look commented out.
  const Run r = test_in(state.path(), fixed_plus("def is_admin(level):\n"
                                                    "    return level == 'user\xe2\x80\xae \xe2\x81\xa6# admin\xe2\x81\xa9 \xe2\x81\xa6'\n"));
  INFO(r.result.dump(2));
  CHECK(r.cli.exit_code == 4);
  CHECK(r.result["status"] == "refused");
  CHECK(r.result["sandbox_id"] == "");
  REQUIRE(r.result["findings"].size() == 1);
  const json& f = r.result["findings"][0];
  CHECK(f["code"] == "bidi_control_in_content");
  CHECK(f["path"] == "calculator.py");
  const std::string seed_src = seed_calculator();
  const auto lines = static_cast<std::size_t>(std::count(seed_src.begin(), seed_src.end(), '\n'));
  CHECK(f["line"] == lines + 2);
  CHECK(f["message"].get<std::string>().find("U+202E (RIGHT-TO-LEFT OVERRIDE) at line " +
                                             std::to_string(lines + 2)) != std::string::npos);
  CHECK(r.cli.err.find("==> create") == std::string::npos);
  // The same file with non-ASCII text and a leading BOM passes.
  const Run ok = test_in(state.path(), patch_json("calculator.py", "\xef\xbb\xbf# café, 计算, שלום\n" +
                                                                          json::parse(fixing_patch())["files"][0]["content"].get<std::string>()));
  CHECK(ok.cli.exit_code == 0);
  CHECK(ok.result["tests_passed"] == true);
}

TEST_CASE("forgery: the family is flagged suspicious by default, and what each verdict is today",
          "[sandbox][forgery]") {
  TempDir state;
  for (const Forgery& fg : forgery_family()) {
    DYNAMIC_SECTION(fg.name) {
      const Run r = test_in(state.path(), fg.patch);
      INFO(r.result.dump(2));
      REQUIRE(r.result["suspicious"].is_array());
      CHECK_FALSE(r.result["suspicious"].empty());
      for (const auto& s : r.result["suspicious"]) {
        CHECK(s["path"] == "calculator.py");
        CHECK(s["line"].get<int>() > 0);
      }
      CHECK(r.result["status"] != "refused");
      // The verdict reads the process's own output: until the runner writes
      // its own evidence (a report file), three of the four still pass.
      const bool passes_today = std::string(fg.name) != "sys.exit(0) at import";
      CHECK(r.result["tests_passed"] == passes_today);
      CHECK(r.cli.exit_code == (passes_today ? 0 : 1));
    }
  }
}

TEST_CASE("forgery: with patch.suspicious: refuse every member of the family is refused (exit 4)",
          "[sandbox][forgery]") {
  TempDir state;
  for (const Forgery& fg : forgery_family()) {
    DYNAMIC_SECTION(fg.name) {
      const Run r = test_in(state.path(), fg.patch, "patch:\n  suspicious: refuse\n");
      INFO(r.result.dump(2));
      CHECK(r.cli.exit_code == 4);
      CHECK(r.result["status"] == "refused");
      CHECK(r.result["sandbox_id"] == "");
      for (const std::string& c : codes_of(r.result["findings"])) CHECK(c.rfind("suspicious_", 0) == 0);
      CHECK_FALSE(r.result["findings"].empty());
    }
  }
}

TEST_CASE("forgery: a legitimate patch that calls sys.exit inside a function passes, nothing flagged",
          "[sandbox][forgery]") {
  TempDir state;
  const std::string cli = "import sys\n"
                          "def main(argv):\n"
                          "    if len(argv) != 3:\n"
                          "        sys.exit('usage: calculator.py A B')\n"
                          "    print(add(float(argv[1]), float(argv[2])))\n"
                          "    return 0\n"
                          "if __name__ == '__main__':\n"
                          "    sys.exit(main(sys.argv))\n";
  for (const char* mode : {"flag", "refuse"}) {
    DYNAMIC_SECTION(mode) {
      const Run r = test_in(state.path(), fixed_plus(cli), std::string("patch:\n  suspicious: ") + mode + "\n");
      INFO(r.result.dump(2));
      CHECK(r.cli.exit_code == 0);
      CHECK(r.result["tests_passed"] == true);
      CHECK(r.result["suspicious"] == json::array());
    }
  }
}

TEST_CASE("forgery: eval's summary names the suspicious tasks and those of them that passed", "[eval][forgery]") {
  TempDir state, io;
  const auto family = forgery_family();
  const std::string tasks =
      json{{"id", "honest"}, {"seed", seed_dir()}, {"patch", json::parse(fixing_patch())}}.dump() + "\n" +
      json{{"id", "forged"}, {"seed", seed_dir()}, {"patch", json::parse(family[3].patch)}}.dump() + "\n" +
      json{{"id", "exits"}, {"seed", seed_dir()}, {"patch", json::parse(family[1].patch)}}.dump() + "\n";
  CliResult r = run_cli({state.path()}, {"eval", io.file("tasks.jsonl", tasks), "--out", io.path() + "/out",
                                         "--no-baseline", "--json"});
  INFO(r.out << r.err);
  const json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  const json& s = j;
  CHECK(s["suspicious"]["ids"] == json::array({"forged", "exits"}));
  CHECK(s["suspicious_passed"]["ids"] == json::array({"forged"}));
  CliResult human = run_cli({state.path()}, {"eval", io.file("tasks.jsonl", tasks), "--out", io.path() + "/out"});
  CHECK(human.out.find("(suspicious)") != std::string::npos);
  CHECK(human.out.find("forged (passed), exits") != std::string::npos);
}
