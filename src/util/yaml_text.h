// YAML text for the documents we generate: Kubernetes manifests
// (export_k8s.h) and compose.yaml (export_compose.h). Pure; the one YAML
// writer of the project.
//
// Each scalar's style is picked so that any YAML reader (yaml-cpp here,
// go-yaml in kubectl and the API server, PyYAML in podman-compose, YAML 1.1
// or 1.2) reads back exactly the value written: plain only for words that
// cannot be read as a number, boolean or null (a letter or '/' followed by
// [A-Za-z0-9._/-], and none of YAML 1.1's y/n/yes/no/on/off/true/false/null
// in any case); a literal block (`|`) for readable multi-line text (file
// contents, the sandbox script, task.json) when it survives one exactly;
// double-quoted with escapes otherwise, so no value can turn into a number,
// a boolean, null, an anchor, a tag or a second document ("yes", "0o17",
// "*x", "--- "). A string no YAML reader could get back (invalid UTF-8, DEL)
// is an error naming where it is, never a silent change. Object key order is
// kept (ordered_json), so documents read top-down; block style throughout.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace lazyagent {

// The document (a JSON object or array) as YAML, ending in a newline. kUsage
// error naming the value's path (e.g. "spec.template.spec.containers[0].command[4]")
// when a string cannot be written so that it reads back unchanged, or for a null.
Result<std::string> to_yaml(const nlohmann::ordered_json& doc);

// True when `s` can be a YAML scalar as it is: valid UTF-8 made only of
// characters every YAML reader keeps (the printable set of YAML 1.2 minus
// what YAML 1.1 readers take as line breaks, minus the BOM and noncharacters).
bool yaml_safe_text(std::string_view s);

// A YAML comment block: each line of `text` prefixed with "# " ("#" alone
// for an empty line).
std::string yaml_comment(const std::string& text);

}  // namespace lazyagent
