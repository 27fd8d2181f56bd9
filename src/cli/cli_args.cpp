#include "cli/cli_args.h"

#include <cerrno>
#include <cstdlib>

namespace lazyagent {

ArgParser::ArgParser(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

void ArgParser::flag(const std::string& name, bool* out, const std::string& help) {
  opts_.push_back({name, Kind::kFlag, out, "", help});
}
void ArgParser::option(const std::string& name, std::string* out, const std::string& metavar,
                       const std::string& help) {
  opts_.push_back({name, Kind::kString, out, metavar, help});
}
void ArgParser::integer(const std::string& name, long* out, const std::string& metavar,
                        const std::string& help, long min, long max) {
  opts_.push_back({name, Kind::kInt, out, metavar, help, min, max});
}
void ArgParser::repeated(const std::string& name, std::vector<std::string>* out,
                         const std::string& metavar, const std::string& help) {
  opts_.push_back({name, Kind::kRepeated, out, metavar, help});
}
void ArgParser::positional(const std::string& metavar, std::string* out, bool required,
                           const std::string& help, std::vector<std::string> choices) {
  pos_.push_back({metavar, out, required, help, std::move(choices)});
}
void ArgParser::choices(const std::string& option, std::vector<std::string> words) {
  if (Opt* o = find(option)) o->choices = std::move(words);
}

ArgShape ArgParser::shape() const {
  ArgShape s;
  s.command = command_;
  s.synopsis = synopsis_;
  s.description = description_;
  for (const auto& o : opts_) s.options.push_back({o.name, o.metavar, o.help, o.choices});
  for (const auto& p : pos_) s.positionals.push_back({p.metavar, p.help, p.required, p.choices});
  return s;
}

ArgParser::Opt* ArgParser::find(const std::string& name) {
  for (auto& o : opts_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

bool ArgParser::given(const std::string& name) const {
  for (const auto& o : opts_) {
    if (o.name == name) return o.given;
  }
  return false;
}

Status ArgParser::set(Opt& o, const std::string& value) {
  o.given = true;
  switch (o.kind) {
    case Kind::kFlag:
      *static_cast<bool*>(o.out) = true;
      break;
    case Kind::kString:
      *static_cast<std::string*>(o.out) = value;
      break;
    case Kind::kRepeated:
      static_cast<std::vector<std::string>*>(o.out)->push_back(value);
      break;
    case Kind::kInt: {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0 || v < o.min || v > o.max) {
        return usage_error(command_ + ": " + o.name + ": expected an integer between " +
                           std::to_string(o.min) + " and " + std::to_string(o.max) + ", got '" +
                           value + "'");
      }
      *static_cast<long*>(o.out) = v;
      break;
    }
  }
  return ok_status();
}

Status ArgParser::parse(const std::vector<std::string>& args) {
  std::size_t next_pos = 0;
  bool only_positional = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!only_positional && (a == "--help" || a == "-h")) {
      help_ = true;
      return ok_status();
    }
    if (!only_positional && a == "--") {
      only_positional = true;
      continue;
    }
    if (!only_positional && a.size() > 1 && a[0] == '-') {
      std::string name = a, value;
      bool has_value = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_value = true;
      }
      Opt* o = find(name);
      if (!o) {
        return usage_error(command_ + ": unknown option " + name + " (see `lazyagent-oci " +
                           command_ + " --help`)");
      }
      if (o->kind == Kind::kFlag) {
        if (has_value) return usage_error(command_ + ": " + name + " takes no value");
      } else if (!has_value) {
        if (i + 1 >= args.size()) return usage_error(command_ + ": " + name + " needs a value (" + o->metavar + ")");
        value = args[++i];
      }
      if (auto st = set(*o, value); !st) return st;
      continue;
    }
    if (next_pos >= pos_.size()) {
      return usage_error(command_ + ": unexpected argument '" + a + "' (see `lazyagent-oci " +
                         command_ + " --help`)");
    }
    *pos_[next_pos++].out = a;
  }
  for (std::size_t k = next_pos; k < pos_.size(); ++k) {
    if (pos_[k].required) return usage_error(command_ + ": missing " + pos_[k].metavar);
  }
  return ok_status();
}

std::string ArgParser::help_text() const {
  std::string s = "usage: lazyagent-oci " + command_ + " " + synopsis_ + "\n\n" + description_ + "\n";
  if (!pos_.empty()) {
    s += "\narguments:\n";
    for (const auto& p : pos_) s += "  " + p.metavar + std::string(p.metavar.size() < 22 ? 22 - p.metavar.size() : 1, ' ') + p.help + "\n";
  }
  s += "\noptions:\n";
  for (const auto& o : opts_) {
    std::string left = o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    s += "  " + left + std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') + o.help + "\n";
  }
  s += "  --help                show this help\n";
  return s;
}

}  // namespace lazyagent
