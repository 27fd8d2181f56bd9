#include "provider/planner_loop.h"

#include <chrono>

#include "util/elapsed.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

const char* loop_stop_name(LoopStop s) {
  switch (s) {
    case LoopStop::kSubmitted: return "submitted";
    case LoopStop::kAnswered: return "answered";
    case LoopStop::kMaxTurns: return "max_turns";
    case LoopStop::kMaxTokens: return "max_tokens";
    case LoopStop::kLoopSeconds: return "loop_seconds";
  }
  return "answered";
}

ChatRequest loop_request(const PlannerTask& task) {
  ChatRequest req = build_chat_request(task);
  req.messages[0].content +=
      "\n\nYou can look around the project before answering: list_files(glob), read_file(path, start_line, "
      "end_line) and search(regex, glob) read the project's files (read-only). The files shown below may be "
      "only part of the project. When you know the fix, call submit_patch once, with `diff` (a unified diff "
      "as above) or `files` (whole new files); prefer a diff when the files are large.";
  req.tools = tool_definitions();
  req.tool_choice = task.loop.tool_choice;
  req.response_format = ResponseFormat::kNone;  // a schema would forbid the tool calls
  req.json_schema = nullptr;
  req.max_tokens = task.loop.max_reply_tokens;
  return req;
}

Result<std::string> submitted_patch(const std::string& arguments) {
  const json a = json::parse(arguments.empty() ? "{}" : arguments, nullptr, false);
  if (a.is_object() && a.contains("diff") && a["diff"].is_string() && !a["diff"].get<std::string>().empty()) {
    std::string d = a["diff"].get<std::string>();
    if (d.back() != '\n') d += "\n";
    return d;
  }
  if (a.is_object() && a.contains("files") && a["files"].is_array()) {
    return json{{"files", a["files"]}}.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return Error{ErrorKind::kPatch, "submit_patch needs `diff` (a non-empty string) or `files` (an array)"};
}

Result<LoopOutcome> run_tool_loop(const ProviderSettings& settings, const PlannerTask& task,
                                  const SnapshotTools& tools, const LoopLog& log) {
  const auto t0 = std::chrono::steady_clock::now();
  LoopOutcome o;
  ChatRequest req = loop_request(task);
  auto say = [&](const std::string& line) {
    if (log) log(redact(line, settings.api_key));
  };
  for (;;) {
    if (o.turns >= task.loop.max_turns) {
      o.stop = LoopStop::kMaxTurns;
      return o;
    }
    if (task.loop.max_tokens > 0 && o.usage.total_tokens >= task.loop.max_tokens) {
      o.stop = LoopStop::kMaxTokens;
      return o;
    }
    if (ms_since(t0) >= task.loop.loop_seconds * 1000) {
      o.stop = LoopStop::kLoopSeconds;
      return o;
    }
    int attempts = 0;
    auto reply = chat_completion(settings, req, log, &attempts);
    o.attempts += attempts;
    if (!reply) return reply.error();
    ++o.turns;
    o.usage.prompt_tokens += reply->usage.prompt_tokens;
    o.usage.completion_tokens += reply->usage.completion_tokens;
    o.usage.total_tokens += reply->usage.total_tokens;
    o.provider_ms += reply->elapsed_ms;
    o.finish_reason = reply->finish_reason;
    o.provider_model = reply->model;
    o.response_format = reply->response_format;
    o.format_refusals.insert(o.format_refusals.end(), reply->format_refusals.begin(), reply->format_refusals.end());
    if (!reply->tools_refusal.empty()) {
      // The provider has no tools: the client asked again at once without
      // them, so this reply is a plain one, read as the one-shot reply is.
      o.tools_refusal = reply->tools_refusal;
      say("the provider refused tools (" + reply->tools_refusal + "): answered without them");
    }
    if (!reply->tool_calls.is_array() || reply->tool_calls.empty()) {
      o.stop = LoopStop::kAnswered;
      o.reply = reply->content;
      return o;
    }
    req.messages.push_back({"assistant", reply->content, reply->tool_calls, ""});
    for (const json& call : reply->tool_calls) {
      const std::string id = call.value("id", "");
      const std::string name = call["function"].value("name", "");
      const std::string args = call["function"].value("arguments", "");
      ToolResult r;
      if (name == kToolSubmitPatch) {
        auto patch = submitted_patch(args);
        if (patch) {
          o.calls.push_back({{"turn", o.turns}, {"name", name}, {"result_bytes", 0}, {"ok", true},
                             {"patch_bytes", patch->size()}});
          say("tool: turn " + std::to_string(o.turns) + ": submit_patch (" + std::to_string(patch->size()) + " bytes)");
          o.stop = LoopStop::kSubmitted;
          o.reply = std::move(*patch);
          return o;
        }
        r = ToolResult{false, "bad_arguments", "error (bad_arguments): " + patch.error().message};
      } else {
        r = tools.call(name, args);
      }
      const std::string content = redact(r.content, settings.api_key);
      bool cut = false;
      const std::string shown_args = escape_for_terminal(truncate_utf8(redact(args, settings.api_key), 300, cut));
      json rec = {{"turn", o.turns}, {"name", to_valid_utf8(name)}, {"arguments", shown_args + (cut ? "..." : "")},
                  {"result_bytes", content.size()}, {"ok", r.ok}};
      if (!r.ok) rec["code"] = r.code;
      o.calls.push_back(rec);
      say("tool: turn " + std::to_string(o.turns) + ": " + to_valid_utf8(name) + " " + shown_args + " -> " +
          std::to_string(content.size()) + " bytes" + (r.ok ? "" : ", " + r.code));
      req.messages.push_back({"tool", content, nullptr, id});
    }
  }
}

}  // namespace lazyagent
