// The shell completion is made from the commands' own parsers
// (command_shapes.h), so it cannot drift from --help: every command of the
// table is there with the options its parser declares.
#include "catch_compat.h"

#include <set>

#include "cli/cli.h"
#include "cli/command_shapes.h"
#include "cli/completion_scripts.h"

using namespace lazyagent;

namespace {

const CommandShape* find_shape(const std::vector<CommandShape>& shapes, const std::string& name) {
  for (const auto& s : shapes) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::set<std::string> option_names(const CommandShape& c) {
  std::set<std::string> out;
  for (const auto& o : c.args.options) out.insert(o.name);
  return out;
}

}  // namespace

TEST_CASE("command_shapes: every command of the table, with the options its own parser declares", "[completion]") {
  const auto shapes = command_shapes();
  REQUIRE(shapes.size() == commands().size());
  for (std::size_t i = 0; i < shapes.size(); ++i) CHECK(shapes[i].name == commands()[i].name);
  const CommandShape* test = find_shape(shapes, "test");
  REQUIRE(test != nullptr);
  CHECK(test->args.command == "test");
  const auto opts = option_names(*test);
  for (const char* o : {"--patch", "--seed", "--allow", "--config", "--runtime", "--backend", "--json"}) {
    CHECK(opts.count(o) == 1);
  }
  const CommandShape* session = find_shape(shapes, "session");
  REQUIRE(session != nullptr);
  std::vector<std::string> subs;
  for (const auto& s : session->subcommands) subs.push_back(s.name);
  CHECK(subs == std::vector<std::string>{"open", "exec", "write", "read", "diff", "prove", "close", "list"});
  CHECK(session->subcommands[1].args.command == "session exec");
  REQUIRE_FALSE(session->subcommands[1].args.positionals.empty());
  CHECK(session->subcommands[1].args.positionals[0].metavar == "ID");
  // version and help have no parser: a name and a summary.
  CHECK(find_shape(shapes, "version")->args.options.empty());
}

TEST_CASE("value_kind: words, files, directories and ids, by what the argument is", "[completion]") {
  CHECK(value_kind("env", "ACTION", {"build", "list"}) == "w:build,list");
  CHECK(value_kind("diff", "RUN_ID", {}) == "runs");
  CHECK(value_kind("session exec", "ID", {}) == "sessions");
  CHECK(value_kind("task", "ID", {}) == "tasks");
  CHECK(value_kind("test", "DIR", {}) == "dir");
  CHECK(value_kind("test", "FILE", {}) == "file");
  CHECK(value_kind("eval", "TASKS.jsonl", {}) == "file");
  CHECK(value_kind("eval", "EVAL_OUT_DIR", {}) == "dir");
  CHECK(value_kind("test", "S", {}) == "");
  CHECK(value_kind("test", "CMD", {}) == "");
}

TEST_CASE("completion_script: bash and zsh carry one table row per command path, fish one line per option",
          "[completion]") {
  const auto shapes = command_shapes();
  const std::string bash = completion_script("bash", shapes);
  CHECK(bash.find("\ncomplete -o filenames -F _lazyagent_oci lazyagent-oci\n") != std::string::npos);
  CHECK(bash.find("\ndiff||--json --help|runs\n") != std::string::npos);
  CHECK(bash.find("\nsession exec||--timeout= --json --help|sessions\n") != std::string::npos);
  CHECK(bash.find("\nenv||") != std::string::npos);
  CHECK(bash.find("--backend=w:podman,k8s") != std::string::npos);
  const std::string zsh = completion_script("zsh", shapes);
  CHECK(zsh.rfind("#compdef lazyagent-oci\n", 0) == 0);
  CHECK(zsh.find("\n  compdef _lazyagent_oci lazyagent-oci\n") != std::string::npos);
  CHECK(zsh.find("loadautofunc") != std::string::npos);  // autoloaded from fpath: the first Tab completes
  const std::string fish = completion_script("fish", shapes);
  CHECK(fish.find("complete -c lazyagent-oci -n '__fish_seen_subcommand_from test' -l patch -r -F") != std::string::npos);
  CHECK(fish.find("-a '(lazyagent-oci completion --ids runs 2>/dev/null)'") != std::string::npos);
  CHECK(completion_script("tcsh", shapes).empty());
}
