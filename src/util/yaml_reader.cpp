#include "util/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>

#include <cstdio>
#include <sstream>

namespace lazyagent {

std::string yaml_printable(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (out.size() > 80) return out + "...";
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string yaml_describe(const YAML::Node& n) {
  if (n.IsNull()) return "nothing";
  if (n.IsSequence()) return n.size() == 0 ? "an empty list" : "a list";
  if (n.IsMap()) return n.size() == 0 ? "an empty mapping" : "a mapping";
  return "'" + yaml_printable(n.Scalar()) + "'";
}

std::string yaml_join_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

namespace {

// The number of YAML documents in `text`, read with the parser's events.
//
// Not YAML::LoadAll: yaml-cpp 0.7 (Debian 12) loops forever in it on a stray
// ',' outside a flow collection (a file holding just ","), each turn adding an
// empty document without consuming input, until memory runs out (found by
// fuzz/config_fuzzer.cpp; upstream jbeder/yaml-cpp#1040, fixed after 0.8).
// Here a document that starts where the previous one started means the parser
// is stuck on a token no rule takes: that is refused as invalid YAML.
class DocumentStarts : public YAML::EventHandler {
 public:
  YAML::Mark start;
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

Result<std::size_t> count_yaml_documents(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  std::size_t count = 0;
  int previous = -1;
  while (parser.HandleNextDocument(starts)) {
    if (starts.start.pos == previous) {
      const std::size_t at = static_cast<std::size_t>(previous);
      const std::string token = at < text.size() ? text.substr(at, 1) : std::string();
      return usage_error(name + ": line " + std::to_string(starts.start.line + 1) + ", column " +
                         std::to_string(starts.start.column + 1) + ": invalid YAML: unexpected '" +
                         yaml_printable(token) + "'");
    }
    previous = starts.start.pos;
    ++count;
  }
  return count;
}

}  // namespace lazyagent
