#include "catch_compat.h"

#include "cli/cli_args.h"

using namespace lazyagent;

TEST_CASE("flags, options, repeats and positionals parse") {
  std::string patch, n;
  std::vector<std::string> allow;
  long timeout = 0;
  bool json = false;
  ArgParser p("test", "", "");
  p.option("--patch", &patch, "FILE", "");
  p.repeated("--allow", &allow, "PATH", "");
  p.integer("--timeout", &timeout, "S", "", 1, 86400);
  p.flag("--json", &json, "");
  p.positional("N", &n, false, "");
  REQUIRE(p.parse({"--patch", "p.json", "--allow=a.py", "--allow", "b.py", "--timeout", "5", "--json", "7"}).ok());
  CHECK(patch == "p.json");
  CHECK(allow == std::vector<std::string>{"a.py", "b.py"});
  CHECK(timeout == 5);
  CHECK(json);
  CHECK(n == "7");
  CHECK(p.given("--patch"));
}

TEST_CASE("bad arguments name the flag and the fix") {
  long timeout = 0;
  bool json = false;
  ArgParser p("test", "", "");
  p.integer("--timeout", &timeout, "S", "", 1, 86400);
  p.flag("--json", &json, "");
  CHECK(p.parse({"--timeout", "soon"}).error().message ==
        "test: --timeout: expected an integer between 1 and 86400, got 'soon'");
  CHECK(p.parse({"--timeout"}).error().message == "test: --timeout needs a value (S)");
  CHECK(p.parse({"--tiemout", "3"}).error().message ==
        "test: unknown option --tiemout (see `lazyagent-oci test --help`)");
  CHECK(p.parse({"--json=yes"}).error().message == "test: --json takes no value");
  CHECK(p.parse({"extra"}).error().message ==
        "test: unexpected argument 'extra' (see `lazyagent-oci test --help`)");
  CHECK(p.parse({"--help"}).ok());
  CHECK(p.help_requested());
  CHECK(p.help_text().find("--timeout S") != std::string::npos);
}

TEST_CASE("shape: a parser's options, metavars, choices and positionals, for the completion") {
  std::string action, patch;
  bool json = false;
  ArgParser p("env", "SYN", "DESC");
  p.positional("ACTION", &action, true, "what to do", {"build", "list"});
  p.option("--patch", &patch, "FILE", "the patch");
  p.option("--backend", &patch, "BACKEND", "where");
  p.choices("--backend", {"podman", "k8s"});
  p.choices("--nope", {"x"});  // an unknown option: nothing to attach to
  p.flag("--json", &json, "JSON");
  const ArgShape s = p.shape();
  CHECK(s.command == "env");
  CHECK(s.synopsis == "SYN");
  REQUIRE(s.options.size() == 3);
  CHECK(s.options[0].name == "--patch");
  CHECK(s.options[0].metavar == "FILE");
  CHECK(s.options[0].help == "the patch");
  CHECK(s.options[1].choices == std::vector<std::string>{"podman", "k8s"});
  CHECK(s.options[2].metavar.empty());
  REQUIRE(s.positionals.size() == 1);
  CHECK(s.positionals[0].metavar == "ACTION");
  CHECK(s.positionals[0].required);
  CHECK(s.positionals[0].choices == std::vector<std::string>{"build", "list"});
  // Choices only complete: the command still judges the value.
  REQUIRE(p.parse({"other"}).ok());
  CHECK(action == "other");
}
