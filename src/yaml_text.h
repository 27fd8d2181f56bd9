// Block-style YAML text from a JSON value, for documents we generate
// (compose.yaml). Pure.
//
// Every string is written as a JSON string literal, which is a valid YAML
// double-quoted scalar: no value can turn into a number, a boolean, null, an
// anchor, a tag or a second document, whatever its content ("yes", "0o17",
// "*x", "--- "). Keys are written plain only when they are made of
// [A-Za-z0-9_./-] and start with a letter or '_'; otherwise quoted too.
// Object key order is kept (ordered_json), so documents read top-down.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lazyagent {

// The document as YAML lines, ending in a newline. Empty objects and arrays
// are written in flow style ({} and []).
std::string to_yaml(const nlohmann::ordered_json& doc);

// A YAML comment block: each line of `text` prefixed with "# " ("#" alone
// for an empty line).
std::string yaml_comment(const std::string& text);

}  // namespace lazyagent
