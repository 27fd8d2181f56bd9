// One session driven through the CLI, as a user drives it (session_test.cpp,
// live_session_test.cpp): open with --json, exec with --json, the other
// subcommands, the session's directory in the run store.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "catch_compat.h"
#include "harness.h"

namespace it {

// The demo seed's calculator.py, fixed.
inline const char* const kFixedCalculator =
    "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a - b\n\n\n"
    "def multiply(a, b):\n    return a * b\n";

struct SessionCli {
  CliEnv env;
  std::string id;
  CliResult opened;       // the open call: its stderr has the steps
  nlohmann::json record;  // what open printed

  explicit SessionCli(const CliEnv& e, std::vector<std::string> extra = {}) : env(e) {
    std::vector<std::string> args = {"session", "open", "--seed", seed_dir(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    opened = run_cli(env, args, 120);
    INFO(opened.err);
    REQUIRE(opened.exit_code == 0);
    record = json_out(opened);
    id = record.at("session_id").get<std::string>();
    REQUIRE(id.rfind("s-", 0) == 0);
  }
  nlohmann::json exec(const std::string& command, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"session", "exec", id, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(command);
    const CliResult r = run_cli(env, args, 180);
    INFO(command << ": " << r.err);
    REQUIRE((r.exit_code == 0 || r.exit_code == 1));
    return json_out(r);
  }
  // `session SUB ID REST...`
  CliResult run(std::vector<std::string> args, int timeout_s = 180) const {
    std::vector<std::string> all = {"session", args[0], id};
    all.insert(all.end(), args.begin() + 1, args.end());
    return run_cli(env, all, timeout_s);
  }
  std::string dir() const { return env.state_dir + "/lazyagent-oci/sessions/" + id; }
};

}  // namespace it
