// A small flag parser: each subcommand declares its options into its own
// struct (STYLE.md principle 10), and gets --help for free.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

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
  void positional(const std::string& metavar, std::string* out, bool required,
                  const std::string& help);

  // Errors are kUsage and name the flag, e.g. "test: --timeout: expected an
  // integer between 1 and 86400, got 'soon'".
  Status parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_; }
  std::string help_text() const;
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
  };
  struct Pos {
    std::string metavar;
    std::string* out;
    bool required;
    std::string help;
  };
  Opt* find(const std::string& name);
  Status set(Opt& o, const std::string& value);

  std::string command_, synopsis_, description_;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
  bool help_ = false;
};

}  // namespace lazyagent
