// Fuzz target: the provider reply parser (src/provider/provider_client.cpp) and the
// patch extraction that follows it in the planner (src/contract/planner_task.cpp).
//
// Input: a chat completion response body, as an OpenAI-compatible server (or
// anything pretending to be one) sends it. The path is the planner's:
// parse_chat_response -> extract_patch_json -> check_patch_text (JSON or a
// unified diff, patch_format.h). Checked
// beyond crashes: errors are kPlanner (kPatch for extraction) with a message
// safe to print; provider_error_text is one printable line of bounded size;
// an extracted patch obeys the contract (fuzz_checks.h); redact leaves no copy
// of a key; retry_after_ms stays within [0, 60 s].
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_checks.h"
#include "contract/planner_task.h"
#include "provider/provider_client.h"

namespace {

using lazyagent::fuzz::is_terminal_safe;

// A key shaped like real ones: no character of "[redacted]" can be part of it,
// so a copy left after redaction would be a real leak.
bool key_like(const std::string& s) {
  if (s.size() < 8 || s == "redacted") return false;
  for (const char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);

  auto reply = lazyagent::parse_chat_response(body);
  if (!reply) {
    FUZZ_CHECK(reply.error().kind == lazyagent::ErrorKind::kPlanner, "parse errors are kPlanner");
    FUZZ_CHECK(is_terminal_safe(reply.error().message, false),
               "parse error message is one printable line: " + reply.error().message);
  } else {
    FUZZ_CHECK(reply->usage.prompt_tokens >= 0 && reply->usage.completion_tokens >= 0 &&
                   reply->usage.total_tokens >= 0,
               "token counts are never negative");
    auto patch_text = lazyagent::extract_patch_json(reply->content);
    if (!patch_text) {
      FUZZ_CHECK(patch_text.error().kind == lazyagent::ErrorKind::kPatch, "no patch is kPatch");
      FUZZ_CHECK(is_terminal_safe(patch_text.error().message, false), "no-patch message printable");
    } else {
      lazyagent::ContractLimits limits;
      limits.allow = {"calculator.py", "src/"};
      if (lazyagent::detect_patch_format(*patch_text) == lazyagent::PatchFormat::kFiles) {
        FUZZ_CHECK(!patch_text->empty() && patch_text->front() == '{', "an extracted JSON patch is an object");
        lazyagent::fuzz::validate_and_check(*patch_text, limits);
      } else {
        FUZZ_CHECK(lazyagent::looks_like_unified_diff(*patch_text), "an extracted diff looks like one");
        lazyagent::fuzz::check_diff_text(*patch_text, limits);
      }
    }
  }

  // The text shown for a non-2xx reply: one line, bounded (300 bytes of the
  // provider's text, each byte escaped to at most 4, plus "..."), printable.
  const std::string shown = lazyagent::provider_error_text(body);
  FUZZ_CHECK(!shown.empty(), "provider_error_text is never empty");
  FUZZ_CHECK(shown.size() <= 300 * 4 + 3, "provider_error_text is bounded");
  FUZZ_CHECK(is_terminal_safe(shown, false), "provider_error_text is one printable line: " + shown);

  // Redaction: the input's first line is the key, the rest the text to redact.
  const std::size_t nl = body.find('\n');
  if (nl != std::string::npos) {
    const std::string key = body.substr(0, nl);
    const std::string text = body.substr(nl + 1);
    const std::string out = lazyagent::redact(text, key);
    if (key_like(key)) FUZZ_CHECK(out.find(key) == std::string::npos, "redact leaves no copy of the key");
    if (key.empty()) FUZZ_CHECK(out == text, "redact with no key changes nothing");
    // The same key inside a provider's error message never survives either.
    const std::string msg = lazyagent::redact(lazyagent::provider_error_text(text), key);
    if (key_like(key)) FUZZ_CHECK(msg.find(key) == std::string::npos, "redacted error text has no key");
  }

  // Retry-After from a hostile server: first line of the input as the header.
  const long wait = lazyagent::retry_after_ms(body.substr(0, std::min<std::size_t>(nl, 200)), 500);
  FUZZ_CHECK(wait >= 0 && wait <= 60000, "retry_after_ms within [0, 60 s]");
  return 0;
}
