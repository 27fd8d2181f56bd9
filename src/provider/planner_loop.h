// The planner's read-only tool loop, inside the planner container.
//
// Turn by turn: send the conversation with the tools (planner_tools.h), run
// every tool call the model makes against the snapshot, append each result
// (bounded, the key redacted) and ask again, until the model calls
// submit_patch (its diff or files are the patch) or answers in plain text
// (the text is the reply, read as the one-shot reply is). Bounds, each a
// stop_reason: max_turns (provider requests), max_tokens (total tokens of all
// turns), loop_seconds (wall time). A provider that refuses `tools` (HTTP 400
// naming tools) is asked the same again without them (provider_client.h):
// its plain reply is read as a one-shot reply, and `tools_refusal` says so. Every call is recorded (name, arguments
// bounded, result bytes, ok or error code); the patch is checked by the
// caller, against the contract, as a one-shot reply is.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "contract/planner_task.h"
#include "provider/planner_tools.h"
#include "provider/provider_client.h"
#include "util/result.h"

namespace lazyagent {

enum class LoopStop { kSubmitted, kAnswered, kMaxTurns, kMaxTokens, kLoopSeconds };
const char* loop_stop_name(LoopStop s);  // submitted, answered, max_turns, max_tokens, loop_seconds

struct LoopOutcome {
  LoopStop stop = LoopStop::kAnswered;
  std::string reply;        // the patch text (submitted) or the model's last text (answered)
  int turns = 0;            // provider requests answered
  TokenUsage usage;         // summed over turns
  int attempts = 0;         // HTTP requests, retries included
  long provider_ms = 0;
  std::string finish_reason, provider_model;
  ResponseFormat response_format = ResponseFormat::kNone;
  std::vector<std::string> format_refusals;
  std::string tools_refusal;  // non-empty: fell back to the one-shot prompt
  nlohmann::json calls = nlohmann::json::array();  // [{turn, name, arguments, result_bytes, ok, code}]
};

// The system and first user message of the loop: the one-shot prompt plus
// how to use the tools and submit.
ChatRequest loop_request(const PlannerTask& task);

using LoopLog = std::function<void(const std::string&)>;

// Provider failures are errors (as chat_completion's); stops are outcomes.
Result<LoopOutcome> run_tool_loop(const ProviderSettings& settings, const PlannerTask& task,
                                  const SnapshotTools& tools, const LoopLog& log);

// submit_patch's arguments as patch text: the diff as given, or
// {"files":[...]} as JSON. kPatch error when neither is there.
Result<std::string> submitted_patch(const std::string& arguments);

}  // namespace lazyagent
