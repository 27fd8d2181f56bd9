// The one YAML writer (compose.yaml here; the Kubernetes manifests in
// export_k8s_test.cpp): exact text, and every awkward string reads back as itself.
#include "catch_compat.h"

#include <yaml-cpp/yaml.h>

#include "util/yaml_text.h"

using namespace lazyagent;
using nlohmann::ordered_json;

TEST_CASE("yaml: block style, plain only where no reader can misread, numbers and booleans, order kept") {
  const ordered_json doc = {{"name", "x"},
                            {"services", {{"b", {{"count", 5}, {"ok", true}, {"n", "no"}}}, {"a", ordered_json::object()}}},
                            {"list", {"one", 2, ordered_json::array()}},
                            {"items", {{{"source", "S"}, {"target", "t"}}}}};
  CHECK(to_yaml(doc).value() ==
        "name: x\n"
        "services:\n"
        "  b:\n"
        "    count: 5\n"
        "    ok: true\n"
        "    \"n\": \"no\"\n"  // YAML 1.1 reads a plain n as false
        "  a: {}\n"
        "list:\n"
        "  - one\n"
        "  - 2\n"
        "  - []\n"
        "items:\n"
        "  - source: S\n"
        "    target: t\n");
}

TEST_CASE("yaml: strings a YAML reader would otherwise reinterpret read back unchanged") {
  const std::vector<std::string> tricky = {
      "yes", "no", "on", "null", "~", "0o17", "1e3", "*anchor", "&a", "!tag", "- item", "a: b",
      "#x", "--- ", "line1\nline2", "tab\there", "quote\"s", "back\\slash", "$$x", "",
      "\xc3\xa9t\xc3\xa9", "\x01\x1b[31m", " lead", "trail "};
  ordered_json doc = ordered_json::object();
  doc["values"] = tricky;
  doc["yes"] = "key that is a boolean word";
  doc["a b"] = "key with a space";
  const YAML::Node y = YAML::Load(to_yaml(doc).value());
  REQUIRE(y["values"].size() == tricky.size());
  for (std::size_t i = 0; i < tricky.size(); ++i) {
    INFO(i);
    CHECK(y["values"][i].as<std::string>() == tricky[i]);
    CHECK(y["values"][i].Tag() == "!");  // a quoted (non-plain) scalar
  }
  CHECK(y["yes"].as<std::string>() == "key that is a boolean word");
  CHECK(y["a b"].as<std::string>() == "key with a space");
}

TEST_CASE("yaml: comments") {
  CHECK(yaml_comment("one\n\ntwo") == "# one\n#\n# two\n");
}
