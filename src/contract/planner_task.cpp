#include "contract/planner_task.h"

#include <algorithm>
#include <cctype>

#include <set>

#include "contract/patch_contract.h"
#include "contract/repo_map.h"
#include "contract/traceback_paths.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

bool is_text(const std::string& s) {
  return s.find('\0') == std::string::npos && is_valid_utf8(s);
}

}  // namespace

AttemptFeedback bounded_feedback(int attempt, std::string_view reason, std::string_view patch_json,
                                 std::string_view test_output) {
  AttemptFeedback f;
  f.attempt = attempt;
  bool cut = false;
  f.reason = truncate_utf8(escape_for_terminal(reason), kMaxFeedbackTextBytes, cut);
  // The patch passed the contract (valid UTF-8, no control characters in
  // what it adds); escape it all the same, and keep the prompt bounded.
  f.patch_json = truncate_utf8(escape_for_terminal(patch_json), 2 * kDefaultPatchBytes + 4096, cut);
  bool out_cut = false;
  f.test_output = escape_for_terminal(tail_utf8(test_output, kMaxFeedbackOutputBytes, out_cut));
  f.test_output = tail_utf8(f.test_output, kMaxFeedbackOutputBytes, cut);  // escapes lengthen it
  f.output_cut = out_cut || cut;
  return f;
}

BaselineFacts bounded_baseline(const std::vector<std::string>& failing, std::size_t failing_total,
                               std::string_view output) {
  BaselineFacts b;
  b.present = true;
  b.failing_total = std::max(failing_total, failing.size());
  for (std::size_t i = 0; i < failing.size() && i < kMaxBaselineFailing; ++i) {
    bool cut = false;
    b.failing.push_back(truncate_utf8(escape_for_terminal(failing[i]), kMaxBaselineNameBytes, cut));
  }
  bool out_cut = false, cut = false;
  b.output = escape_for_terminal(tail_utf8(output, kMaxFeedbackOutputBytes, out_cut));
  b.output = tail_utf8(b.output, kMaxFeedbackOutputBytes, cut);  // escapes lengthen it
  b.output_cut = out_cut || cut;
  return b;
}

namespace {

// Whether `text` names the file at `path`: the path itself, or its module
// name (the file name without extension, as a whole word, 3 characters or more).
bool text_names(std::string_view text, const std::string& path) {
  if (text.empty()) return false;
  if (text.find(path) != std::string_view::npos) return true;
  const std::size_t slash = path.rfind('/');
  std::string stem = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (const std::size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  if (stem.size() < 3 || stem == "__init__") return false;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(stem); at != std::string_view::npos; at = text.find(stem, at + 1)) {
    const bool left = at == 0 || !word(text[at - 1]);
    const bool right = at + stem.size() >= text.size() || !word(text[at + stem.size()]);
    if (left && right) return true;
  }
  return false;
}

bool looks_like_test(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  return name.rfind("test_", 0) == 0 || name.find("_test.") != std::string::npos ||
         path.find("tests/") != std::string::npos || path.rfind("test/", 0) == 0;
}

constexpr std::size_t kMaxCutSample = 50;

}  // namespace

PlannerTask build_task(const SeedSnapshot& seed, const Config& config,
                       const std::string& instruction, const std::string& task_id,
                       std::size_t max_bytes, const AttemptFeedback* feedback, const BaselineFacts* baseline) {
  PlannerTask t;
  t.task_id = task_id;
  t.instruction = instruction.empty() ? kDefaultInstruction : instruction;
  t.test_command = config.test_command;
  t.contract = contract_limits(config);
  t.patch_format = config.patch.format;
  t.connect_timeout_ms = static_cast<long>(config.provider.connect_timeout_seconds) * 1000;
  t.timeout_ms = static_cast<long>(config.provider.timeout_seconds) * 1000;
  t.max_retries = static_cast<int>(config.provider.max_retries);
  t.response_format = parse_response_format(config.provider.response_format).value_or(ResponseFormat::kJsonSchema);
  t.loop.tools = config.planner.tools;
  t.loop.max_turns = static_cast<int>(config.planner.max_turns);
  t.loop.tool_result_bytes = static_cast<std::size_t>(config.planner.tool_result_bytes);
  t.loop.loop_seconds = static_cast<long>(config.planner.loop_seconds);
  t.loop.tool_choice = config.planner.tool_choice;
  t.loop.max_reply_tokens = static_cast<long>(config.planner.max_reply_tokens);
  t.loop.max_tokens = static_cast<long>(config.repair.max_tokens);
  if (baseline && baseline->present) t.baseline = *baseline;
  // The map first: small, bounded on its own, and it shows what the budget cuts.
  RepoMapLimits map_limits;
  map_limits.total_bytes = static_cast<std::size_t>(std::clamp<std::int64_t>(config.planner.map_bytes, 0, kMaxRepoMapBytes));
  t.repo_map = repo_map(seed, map_limits);
  // Rank every file: the files the patch may change first (a model cannot
  // write a diff against a file it was not shown), then the files the
  // baseline's tracebacks point at, then what the instruction or the last
  // test output names, then tests, then the rest, by path within each.
  const std::string named_in = t.instruction + "\n" + (feedback ? feedback->reason + "\n" + feedback->test_output : "");
  std::set<std::string> by_baseline;
  if (t.baseline.present) {
    std::vector<std::string> paths;
    for (const auto& e : seed.entries) {
      if (e.kind == SeedEntry::Kind::kFile) paths.push_back(e.path);
    }
    for (auto& p : paths_named_by_output(t.baseline.output, paths)) by_baseline.insert(std::move(p));
  }
  struct Ranked {
    const SeedEntry* e;
    int rank;
    const char* why;
  };
  std::vector<Ranked> ranked;
  for (const auto& e : seed.entries) {
    if (e.kind != SeedEntry::Kind::kFile) continue;
    if (path_on_allowlist(e.path, config.allow)) ranked.push_back({&e, 0, "editable"});
    else if (by_baseline.count(e.path)) ranked.push_back({&e, 1, "named_by_baseline"});
    else if (text_names(named_in, e.path)) ranked.push_back({&e, 2, "named"});
    else if (looks_like_test(e.path)) ranked.push_back({&e, 3, "test"});
    else ranked.push_back({&e, 4, "source"});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  std::size_t used = 0;
  json included = json::array(), cut_sample = json::array();
  std::size_t cut = 0;
  for (const auto& r : ranked) {
    const SeedEntry& e = *r.e;
    const char* why_cut = nullptr;
    std::string content;
    if (used + e.size > max_bytes) {
      why_cut = "over_budget";
    } else if (auto c = read_seed_file(seed, e, max_bytes); !c || !is_text(*c)) {
      why_cut = "binary";
    } else {
      content = std::move(*c);
    }
    if (why_cut) {
      t.skipped.push_back(e.path);
      if (cut++ < kMaxCutSample) cut_sample.push_back({{"path", e.path}, {"why", why_cut}});
      continue;
    }
    used += content.size();
    included.push_back({{"path", e.path}, {"bytes", content.size()}, {"why", r.why}});
    t.files.push_back({e.path, std::move(content), r.rank == 0});
  }
  t.context = {{"budget_bytes", max_bytes}, {"used_bytes", used}, {"token_estimate", (used + t.repo_map.size() + 3) / 4},
               {"included", included}, {"cut", cut}, {"cut_sample", cut_sample}, {"map_bytes", t.repo_map.size()}};
  if (t.baseline.present) {
    t.context["baseline"] = {{"failing_total", t.baseline.failing_total},
                             {"failing", json(std::vector<std::string>(
                                             t.baseline.failing.begin(),
                                             t.baseline.failing.begin() + std::min<std::size_t>(10, t.baseline.failing.size())))},
                             {"output_bytes", t.baseline.output.size()},
                             {"named", json(std::vector<std::string>(by_baseline.begin(), by_baseline.end()))}};
  }
  return t;
}

json task_to_json(const PlannerTask& t) {
  json files = json::array();
  for (const auto& f : t.files) files.push_back({{"path", f.path}, {"content", f.content}, {"editable", f.editable}});
  return json{{"task_id", t.task_id},
              {"instruction", t.instruction},
              {"test_command", t.test_command},
              {"files", files},
              {"skipped", t.skipped},
              {"context", t.context},
              {"contract",
               {{"allow", t.contract.allow},
                {"max_files", t.contract.max_files},
                {"max_bytes", t.contract.max_bytes},
                {"max_diff_bytes", t.contract.max_diff_bytes},
                {"max_changed_lines", t.contract.max_changed_lines},
                {"format", t.patch_format},
                 {"refuse_suspicious", t.contract.refuse_suspicious}}},
              {"provider",
               {{"connect_timeout_ms", t.connect_timeout_ms},
                {"timeout_ms", t.timeout_ms},
                {"max_retries", t.max_retries},
                {"response_format", response_format_name(t.response_format)}}},
              {"loop",
               {{"tools", t.loop.tools},
                {"max_turns", t.loop.max_turns},
                {"tool_result_bytes", t.loop.tool_result_bytes},
                {"loop_seconds", t.loop.loop_seconds},
                {"tool_choice", t.loop.tool_choice},
                {"max_reply_tokens", t.loop.max_reply_tokens},
                {"max_tokens", t.loop.max_tokens}}},
              {"feedback",
               t.feedback.attempt == 0
                   ? json(nullptr)
                   : json{{"attempt", t.feedback.attempt},
                          {"reason", t.feedback.reason},
                          {"patch", t.feedback.patch_json},
                          {"test_output", t.feedback.test_output},
                          {"output_cut", t.feedback.output_cut}}},
              {"baseline", !t.baseline.present ? json(nullptr)
                                               : json{{"failing", t.baseline.failing},
                                                      {"failing_total", t.baseline.failing_total},
                                                      {"output", t.baseline.output},
                                                      {"output_cut", t.baseline.output_cut}}},
              {"repo_map", t.repo_map}};
}

Result<PlannerTask> task_from_json(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return usage_error("task: not a JSON object");
  try {
    PlannerTask t;
    t.task_id = j.at("task_id").get<std::string>();
    t.instruction = j.at("instruction").get<std::string>();
    t.test_command = j.at("test_command").get<std::string>();
    for (const auto& f : j.at("files")) {
      t.files.push_back({f.at("path").get<std::string>(), f.at("content").get<std::string>(),
                         f.at("editable").get<bool>()});
    }
    t.skipped = j.value("skipped", std::vector<std::string>{});
    const json& c = j.at("contract");
    t.contract.allow = c.at("allow").get<std::vector<std::string>>();
    t.contract.max_files = std::min(c.at("max_files").get<std::size_t>(), kMaxPatchFilesCap);
    t.contract.max_bytes = std::min(c.at("max_bytes").get<std::size_t>(), kMaxPatchBytesCap);
    // Tasks from before diffs lack these: the defaults.
    t.contract.max_diff_bytes = std::min(c.value("max_diff_bytes", kDefaultDiffBytes), kMaxDiffBytesCap);
    t.contract.max_changed_lines = std::min(c.value("max_changed_lines", kDefaultChangedLines), kMaxChangedLinesCap);
    t.patch_format = c.value("format", std::string("files")) == "diff" ? "diff" : "files";
    t.contract.refuse_suspicious = c.value("refuse_suspicious", false);
    const json& p = j.at("provider");
    t.connect_timeout_ms = p.at("connect_timeout_ms").get<long>();
    t.timeout_ms = p.at("timeout_ms").get<long>();
    t.max_retries = p.at("max_retries").get<int>();
    const auto format = parse_response_format(p.value("response_format", "json_schema"));
    if (!format) return usage_error("task: provider.response_format: expected json_schema, json_object or none");
    t.response_format = *format;
    if (j.contains("loop") && j["loop"].is_object()) {  // bounded again: the task is input here too
      const json& l = j["loop"];
      t.loop.tools = l.value("tools", false);
      t.loop.max_turns = std::clamp(l.value("max_turns", 20), 1, 200);
      t.loop.tool_result_bytes = std::clamp<std::size_t>(l.value("tool_result_bytes", std::size_t{16384}), 256, 1u << 20);
      t.loop.loop_seconds = std::clamp(l.value("loop_seconds", 300L), 1L, 86400L);
      t.loop.tool_choice = l.value("tool_choice", std::string("auto")) == "required" ? "required" : "auto";
      t.loop.max_reply_tokens = std::clamp(l.value("max_reply_tokens", 0L), 0L, 1L << 20);
      t.loop.max_tokens = std::max(l.value("max_tokens", 0L), 0L);
    }
    if (j.contains("feedback") && j["feedback"].is_object()) {
      const json& f = j["feedback"];
      // Bounded again here: the task file is input to the planner too.
      t.feedback = bounded_feedback(f.at("attempt").get<int>(), f.at("reason").get<std::string>(),
                                    f.at("patch").get<std::string>(), f.at("test_output").get<std::string>());
      t.feedback.output_cut = t.feedback.output_cut || f.value("output_cut", false);
    }
    if (j.contains("baseline") && j["baseline"].is_object()) {
      const json& b = j["baseline"];  // bounded again: the task is input here too
      t.baseline = bounded_baseline(b.at("failing").get<std::vector<std::string>>(),
                                    b.value("failing_total", std::size_t{0}), b.at("output").get<std::string>());
      t.baseline.output_cut = t.baseline.output_cut || b.value("output_cut", false);
    }
    bool map_cut = false;
    t.repo_map = truncate_utf8(to_valid_utf8(j.value("repo_map", std::string())), kMaxRepoMapBytes, map_cut);
    return t;
  } catch (const json::exception& e) {
    return usage_error(std::string("task: ") + e.what());
  }
}

ChatRequest build_chat_request(const PlannerTask& t) {
  std::string allow;
  for (const auto& a : t.contract.allow) allow += (allow.empty() ? "" : ", ") + a;
  const std::string limits = "You may change only these paths: " + allow + ". At most " +
                             std::to_string(t.contract.max_files) + " files";
  const std::string rules =
      " Never change the tests, never use control characters other than tab and newline, and never "
      "include credentials.";
  const std::string system =
      t.patch_format == "diff"
          ? "You are a careful software engineer working on a project. You change it so that its tests pass. "
            "Answer with exactly one unified diff and nothing else (or one ```diff fenced block), as `git diff` "
            "writes it: for each file a `--- a/<path>` line, a `+++ b/<path>` line, then hunks starting "
            "`@@ -<line>,<count> +<line>,<count> @@` with 3 unchanged context lines around each change, copied "
            "exactly from the file. A new file has `--- /dev/null`. " +
                limits + ", " + std::to_string(t.contract.max_changed_lines) + " changed lines and " +
                std::to_string(t.contract.max_diff_bytes) + " bytes of diff." + rules
          : "You are a careful software engineer working on a small project. You change it so that "
            "its tests pass. Answer with exactly one JSON object and nothing else, of the form "
            "{\"files\":[{\"path\":\"<relative path>\",\"content\":\"<the complete new file>\"}]}. "
            "Each content is the whole new file in UTF-8, not a diff. " +
                limits + " and " + std::to_string(t.contract.max_bytes) + " bytes of content in total." + rules;
  std::string user = "Instruction: " + t.instruction + "\n\nThe tests run with: " + t.test_command + "\n";
  if (t.baseline.present) {
    const BaselineFacts& b = t.baseline;
    user += "\nBefore any change the tests do not pass.";
    if (!b.failing.empty()) {
      user += " Failing (" + std::to_string(b.failing_total) + "):";
      for (const auto& f : b.failing) user += " " + f;
      if (b.failing_total > b.failing.size()) user += " ...";
    }
    user += std::string("\nTheir output") +
            (b.output_cut ? " (its last " + std::to_string(kMaxFeedbackOutputBytes) + " bytes)" : "") +
            ", control characters escaped:\n<<<baseline-output\n" + b.output +
            (b.output.empty() || b.output.back() == '\n' ? "" : "\n") + "baseline-output>>>\n";
  }
  if (!t.repo_map.empty()) {
    user += "\nRepository map (path, bytes, top-level definitions):\n" + t.repo_map;
    if (t.repo_map.back() != '\n') user += "\n";
  }
  user += "\nProject files:\n";
  for (const auto& f : t.files) {
    user += "\n=== " + f.path + (f.editable ? " (editable)" : " (read-only)") + " ===\n" + f.content;
    if (!f.content.empty() && f.content.back() != '\n') user += "\n";
  }
  if (!t.skipped.empty()) {
    // Bounded: a large repository lists thousands (the tools list the rest).
    constexpr std::size_t kMaxListed = 16 * 1024;
    std::string listed;
    std::size_t n = 0;
    for (const auto& s : t.skipped) {
      if (listed.size() + s.size() + 1 > kMaxListed) break;
      listed += " " + s;
      ++n;
    }
    user += "\nFiles not shown (binary or over the size budget):" + listed;
    if (n < t.skipped.size()) user += " ... and " + std::to_string(t.skipped.size() - n) + " more";
    user += "\n";
  }
  if (t.feedback.attempt > 0) {
    const AttemptFeedback& f = t.feedback;
    user += "\nPrevious attempt " + std::to_string(f.attempt) + " did not pass: " + f.reason + "\n";
    if (!f.patch_json.empty()) user += "Its patch was:\n" + f.patch_json + "\n";
    user += std::string("Test output of that attempt") +
            (f.output_cut ? " (its last " + std::to_string(kMaxFeedbackOutputBytes) + " bytes)" : "") +
            ", control characters escaped:\n<<<test-output\n" + f.test_output +
            (f.test_output.empty() || f.test_output.back() == '\n' ? "" : "\n") +
            "test-output>>>\nPropose a new patch that makes all the tests pass.\n";
  }
  ChatRequest req;
  req.messages = {{"system", system, nullptr, ""}, {"user", user, nullptr, ""}};
  // A diff is text: no JSON response format is asked for.
  req.response_format = t.patch_format == "diff" ? ResponseFormat::kNone : t.response_format;
  if (req.response_format == ResponseFormat::kJsonSchema) req.json_schema = patch_json_schema(t.contract);
  req.temperature = 0.0;
  return req;
}

json patch_json_schema(const ContractLimits& contract) {
  json path = {{"type", "string"}};
  const bool all_files = !contract.allow.empty() &&
      std::none_of(contract.allow.begin(), contract.allow.end(),
                   [](const std::string& a) { return a.empty() || a.back() == '/'; });
  if (all_files) path["enum"] = contract.allow;
  const json file = {{"type", "object"},
                     {"properties", {{"path", path}, {"content", {{"type", "string"}}}}},
                     {"required", {"path", "content"}},
                     {"additionalProperties", false}};
  return {{"name", "patch"},
          {"schema",
           {{"type", "object"},
            {"properties", {{"files", {{"type", "array"}, {"items", file}}}}},
            {"required", {"files"}},
            {"additionalProperties", false}}}};
}

namespace {

// A diff keeps its lines as they are: only empty lines around it go (a line
// of one space is an empty context line and stays), and it ends with a
// newline (a hunk's last line is a line).
std::string diff_block(std::string_view s) {
  while (!s.empty() && (s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  // Drop empty lines ("" or "\r") at the end; the last line keeps its "\r".
  for (;;) {
    if (s.empty()) return "\n";
    const std::size_t body_end = s.back() == '\n' ? s.size() - 1 : s.size();
    const std::size_t line_start = s.rfind('\n', body_end == 0 ? 0 : body_end - 1);
    const std::size_t from = line_start == std::string_view::npos ? 0 : line_start + 1;
    const std::string_view last = s.substr(from, body_end - from);
    if (!(last.empty() || last == "\r") || from == 0) {
      return std::string(s.substr(0, body_end)) + "\n";
    }
    s = s.substr(0, from);
  }
}

}  // namespace

Result<std::string> extract_patch_json(const std::string& reply) {
  const std::string body = trim_space(reply);
  if (!body.empty() && body.front() == '{') return body;
  struct Block {
    std::string raw;
    std::string trimmed;
  };
  std::vector<Block> blocks;
  std::size_t pos = 0;
  while ((pos = reply.find("```", pos)) != std::string::npos) {
    const auto eol = reply.find('\n', pos);
    if (eol == std::string::npos) break;
    const auto end = reply.find("```", eol + 1);
    if (end == std::string::npos) break;
    const std::string raw = reply.substr(eol + 1, end - eol - 1);
    blocks.push_back({raw, trim_space(raw)});
    pos = end + 3;
  }
  if (blocks.empty() && looks_like_unified_diff(body)) return diff_block(reply);
  if (blocks.size() == 1 && !blocks[0].trimmed.empty() && blocks[0].trimmed.front() == '{') return blocks[0].trimmed;
  if (blocks.size() == 1 && looks_like_unified_diff(blocks[0].raw)) return diff_block(blocks[0].raw);
  std::string why = blocks.empty() ? "it is neither a JSON object, nor a unified diff, nor one fenced code block"
                                   : std::to_string(blocks.size()) +
                                         " fenced code blocks, want exactly one JSON object or unified diff";
  return Error{ErrorKind::kPatch, "the model's reply holds no patch: " + why};
}

std::vector<Finding> secret_findings(const PatchCheck& patch, const std::vector<std::string>& secrets) {
  if (patch.format == PatchFormat::kFiles) return secret_findings(patch.files, secrets);
  Patch added;
  for (const FileDiff& f : patch.diff.files) {
    PatchFile p{f.path, ""};
    for (const auto& h : f.hunks) {
      for (const auto& l : h.lines) {
        if (l.op == '+') p.content += l.text + "\n";
      }
    }
    added.files.push_back(std::move(p));
  }
  return secret_findings(added, secrets);
}

std::vector<Finding> secret_findings(const Patch& patch, const std::vector<std::string>& secrets) {
  std::vector<Finding> out;
  for (const auto& f : patch.files) {
    for (const auto& s : secrets) {
      if (s.size() >= 8 && (f.content.find(s) != std::string::npos || f.path.find(s) != std::string::npos)) {
        out.push_back({"secret_in_content", f.path, "the file carries a provider secret; refusing it"});
        break;
      }
    }
  }
  return out;
}

}  // namespace lazyagent
