#include "cli/command_shapes.h"

#include <iostream>
#include <sstream>

#include "cli/session_command.h"

namespace lazyagent {

namespace {

// The shapes parse_or_exit records while command_shapes() asks a command.
thread_local std::vector<ArgShape>* t_recording = nullptr;

// Sends std::cout and std::cerr nowhere for its lifetime (what a command
// would print after --help; version and help print regardless).
class QuietStreams {
 public:
  QuietStreams() : out_(std::cout.rdbuf(sink_.rdbuf())), err_(std::cerr.rdbuf(sink_.rdbuf())) {}
  ~QuietStreams() {
    std::cout.rdbuf(out_);
    std::cerr.rdbuf(err_);
  }
  QuietStreams(const QuietStreams&) = delete;
  QuietStreams& operator=(const QuietStreams&) = delete;

 private:
  std::ostringstream sink_;
  std::streambuf* out_;
  std::streambuf* err_;
};

ArgShape shape_of(const Command& c, const std::string& full_name) {
  std::vector<ArgShape> seen;
  t_recording = &seen;
  (void)c.run({"--help"});
  t_recording = nullptr;
  if (seen.empty()) {
    ArgShape none;
    none.command = full_name;
    return none;
  }
  return seen.front();
}

}  // namespace

const std::vector<Command>& subcommands_of(const std::string& command) {
  static const std::vector<Command> none;
  if (command == "session") return session_subcommands();
  return none;
}

bool record_shape(const ArgParser& parser) {
  if (t_recording == nullptr) return false;
  t_recording->push_back(parser.shape());
  return true;
}

std::vector<CommandShape> command_shapes() {
  QuietStreams quiet;
  std::vector<CommandShape> out;
  for (const auto& c : commands()) {
    CommandShape s{c.name, c.summary, shape_of(c, c.name), {}};
    for (const auto& sub : subcommands_of(c.name)) {
      s.subcommands.push_back({sub.name, sub.summary, shape_of(sub, std::string(c.name) + " " + sub.name), {}});
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace lazyagent
