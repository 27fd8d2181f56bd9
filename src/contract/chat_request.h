// What the planner and a provider exchange, as values: the chat request a
// planner task becomes (planner_task.h build_chat_request) and the reply the
// provider client returns (provider_client.h, which sends it over HTTP). Kept
// apart from the client so that the task and its fuzzers need no libcurl.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

struct ChatMessage {
  std::string role;  // system | user | assistant | tool
  std::string content;
  // An assistant turn that called tools: the provider's tool_calls array, sent
  // back as it came (content is then null when empty). A tool turn: the id of
  // the call it answers.
  nlohmann::json tool_calls;
  std::string tool_call_id;
};

enum class ResponseFormat { kJsonSchema, kJsonObject, kNone };

// "json_schema", "json_object", "none" (the config's and the records' words).
const char* response_format_name(ResponseFormat f);
std::optional<ResponseFormat> parse_response_format(std::string_view name);

struct ChatRequest {
  std::vector<ChatMessage> messages;
  ResponseFormat response_format = ResponseFormat::kJsonObject;
  // For kJsonSchema: {"name": ..., "schema": {...}}, sent as
  // response_format {"type":"json_schema","json_schema":{..., "strict":true}}.
  nlohmann::json json_schema;
  double temperature = 0.0;
  long max_tokens = 0;  // 0 = omit
  // The OpenAI `tools` array (planner_tools.h) and tool_choice ("auto",
  // "required"); omitted when tools is not an array. A 400 or 422 whose error
  // mentions tools is retried at once without tools and tool_choice (each
  // request at most once): ChatReply::tools_refusal then holds the
  // provider's words, and the reply is a plain one.
  nlohmann::json tools;
  std::string tool_choice;
};

struct TokenUsage {
  long prompt_tokens = 0, completion_tokens = 0, total_tokens = 0;
};

struct ChatReply {
  std::string content;        // choices[0].message.content
  TokenUsage usage;           // zeros when the provider sent none
  std::string model;          // as the provider named it
  std::string finish_reason;  // "stop", "length" (cut by max_tokens), ...
  int attempts = 0;           // HTTP requests sent, the fallback included
  long elapsed_ms = 0;        // all attempts and waits
  ResponseFormat response_format = ResponseFormat::kNone;  // what the accepted reply was asked with
  std::vector<std::string> format_refusals;  // the provider's words for each refused format
  // choices[0].message.tool_calls when the model called tools (content may
  // then be empty): [{id, type:"function", function:{name, arguments}}],
  // each checked for that shape; null otherwise.
  nlohmann::json tool_calls;
  std::string tools_refusal;  // non-empty: the provider refused `tools`, the reply was asked without
};

}  // namespace lazyagent
