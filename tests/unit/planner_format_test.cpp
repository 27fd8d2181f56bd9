// What the planner asks the provider for: the patch's JSON schema (what local
// servers turn into a grammar), the configured response format carried by
// the task file, and its validation in the config.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include "config.h"
#include "contract/patch_contract.h"
#include "contract/planner_task.h"
#include "provider/provider_client.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

PlannerTask task_with(const std::string& yaml) {
  SeedSnapshot seed;
  seed.entries.push_back({"calculator.py", SeedEntry::Kind::kFile, 0644, "def add(a, b):\n    return a - b\n"});
  auto config = parse_config(yaml, "t.yaml", "/tmp");
  REQUIRE(config.ok());
  return build_task(seed, *config, "fix add", "t-1");
}

}  // namespace

TEST_CASE("planner format: json_schema by default, the patch schema with the allowlist as an enum", "[planner]") {
  const PlannerTask t = task_with("allow: [calculator.py, util.py]\n");
  CHECK(t.response_format == ResponseFormat::kJsonSchema);
  const ChatRequest req = build_chat_request(t);
  CHECK(req.response_format == ResponseFormat::kJsonSchema);
  CHECK(req.json_schema == json::parse(R"({
    "name": "patch",
    "schema": {
      "type": "object",
      "properties": {"files": {"type": "array", "items": {
        "type": "object",
        "properties": {"path": {"type": "string", "enum": ["calculator.py", "util.py"]},
                       "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": false}}},
      "required": ["files"],
      "additionalProperties": false}})"));
}

TEST_CASE("planner format: a directory on the allowlist leaves the path a free string", "[planner]") {
  ContractLimits limits;
  limits.allow = {"calculator.py", "lib/"};
  const json schema = patch_json_schema(limits);
  CHECK(schema["schema"]["properties"]["files"]["items"]["properties"]["path"] == json({{"type", "string"}}));
}

TEST_CASE("planner format: the configured format travels in the task file", "[planner]") {
  for (const char* name : {"json_object", "none", "json_schema"}) {
    const PlannerTask t = task_with(std::string("provider:\n  response_format: ") + name + "\n");
    CHECK(task_to_json(t)["provider"]["response_format"] == name);
    auto back = task_from_json(task_to_json(t).dump());
    REQUIRE(back.ok());
    CHECK(response_format_name(back->response_format) == std::string(name));
    const ChatRequest req = build_chat_request(*back);
    CHECK(req.response_format == back->response_format);
    CHECK(req.json_schema.is_object() == (back->response_format == ResponseFormat::kJsonSchema));
  }
  // A task file from before the key existed asks for the schema.
  json j = task_to_json(task_with(""));
  j["provider"].erase("response_format");
  auto old = task_from_json(j.dump());
  REQUIRE(old.ok());
  CHECK(old->response_format == ResponseFormat::kJsonSchema);
  j["provider"]["response_format"] = "xml";
  auto bad = task_from_json(j.dump());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "task: provider.response_format: expected json_schema, json_object or none");
}

TEST_CASE("planner format: an unknown response_format in the config names the key", "[planner][config]") {
  auto config = parse_config("provider:\n  response_format: grammar\n", "c.yaml", "/tmp");
  REQUIRE_FALSE(config.ok());
  CHECK(config.error().message.find("c.yaml: provider.response_format: expected 'json_schema', 'json_object' or 'none'") !=
        std::string::npos);
}
