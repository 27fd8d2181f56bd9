// A small flag parser: each subcommand declares its options into its own
// struct (STYLE.md principle 10), and gets --help for free.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

// What a parser accepts, for the shell completion (command_shapes.h): its
// options (a flag has no metavar), its positionals, and the words a value
// may be where a command names them.
struct ArgShape {
  struct Option {
    std::string name, metavar, help;
    std::vector<std::string> choices;
  };
  struct Positional {
    std::string metavar, help;
    bool required = false;
    std::vector<std::string> choices;
  };
  std::string command;  // "test", "session exec"
  std::string synopsis, description;
  std::vector<Option> options;
  std::vector<Positional> positionals;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string synopsis, std::string description);

  void flag(const std::string& name, bool* out, const std::string& help);
  void option(const std::string& name, std::string* out, const std::string& metavar,
              const std::string& help);
  void integer(const std::string& name, long* out, const std::string& metavar,
               const std::string& help, long min, long max);
  void repeated(const std::string& name, std::vector<std::string>* out,
                const std::string& metavar, const std::string& help);
  // Positional arguments, in order; optional ones after required ones.
  // `choices`: the words it may be (completed by the shell; the command
  // still checks the value).
  void positional(const std::string& metavar, std::string* out, bool required,
                  const std::string& help, std::vector<std::string> choices = {});
  // The words an option's value may be (completion only, as above).
  void choices(const std::string& option, std::vector<std::string> words);

  // Errors are kUsage and name the flag, e.g. "test: --timeout: expected an
  // integer between 1 and 86400, got 'soon'".
  Status parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_; }
  std::string help_text() const;
  ArgShape shape() const;
  // Whether the option was given on the command line.
  bool given(const std::string& name) const;

 private:
  enum class Kind { kFlag, kString, kInt, kRepeated };
  struct Opt {
    std::string name;
    Kind kind;
    void* out;
    std::string metavar, help;
    long min = 0, max = 0;
    bool given = false;
    std::vector<std::string> choices = {};
  };
  struct Pos {
    std::string metavar;
    std::string* out;
    bool required;
    std::string help;
    std::vector<std::string> choices;
  };
  Opt* find(const std::string& name);
  Status set(Opt& o, const std::string& value);

  std::string command_, synopsis_, description_;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
  bool help_ = false;
};

}  // namespace lazyagent
