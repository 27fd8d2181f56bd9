#include "contract/chat_request.h"

namespace lazyagent {

const char* response_format_name(ResponseFormat f) {
  switch (f) {
    case ResponseFormat::kJsonSchema: return "json_schema";
    case ResponseFormat::kJsonObject: return "json_object";
    case ResponseFormat::kNone: return "none";
  }
  return "none";
}

std::optional<ResponseFormat> parse_response_format(std::string_view name) {
  for (ResponseFormat f : {ResponseFormat::kJsonSchema, ResponseFormat::kJsonObject, ResponseFormat::kNone}) {
    if (name == response_format_name(f)) return f;
  }
  return std::nullopt;
}

}  // namespace lazyagent
