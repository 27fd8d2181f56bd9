// `lazyagent-oci plan`: the planner, run inside the planner container.
//
// Contract with the orchestrator (planner_run.cpp):
//   in:   the task (--task, uploaded to /task/task.json) and the three secret
//         files (--secrets-dir, /run/secrets/{base_url,model,api_key})
//   out:  stdout carries only the patch JSON, nothing else;
//         stderr is the task log, one line per event, never the key; its last
//         line is "planner-summary: {json}" (model, usage, attempts, timings,
//         error or findings)
//   exit: 0 patch written, 3 provider error, 4 reply refused, 2 bad task/secrets
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "contract/patch_contract.h"
#include "contract/patch_format.h"
#include "policy/planner_egress.h"
#include "provider/proxy_egress_probe.h"
#include "policy/planner_policy.h"
#include "provider/planner_loop.h"
#include "contract/planner_task.h"
#include "provider/provider_client.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

Result<std::string> read_small_file(const std::string& path, std::size_t max) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return usage_error("cannot read " + path);
  std::string data(max + 1, '\0');
  f.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<std::size_t>(f.gcount()));
  if (data.size() > max) return usage_error(path + " is larger than " + std::to_string(max) + " bytes");
  return data;
}

std::string trim_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

struct PlanLog {
  std::string key;  // redacted from every line
  json summary = json::object();
  void line(const std::string& text) const {
    std::cerr << "planner: " << escape_for_terminal(redact(text, key)) << std::endl;
  }
  int finish(int code) {
    summary["exit_code"] = code;
    std::cerr << "planner-summary: " << redact(summary.dump(-1, ' ', false, json::error_handler_t::replace), key)
              << std::endl;
    return code;
  }
};

json findings_json(const std::vector<Finding>& findings) { return findings_to_json(findings); }

}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  std::string task_path = kTaskFile;
  std::string secrets_dir = kSecretsDir;
  std::string snapshot_dir = kSnapshotDir;
  ArgParser p("plan", "[--task FILE] [--secrets-dir DIR] [--snapshot DIR] [--egress-report FILE]\n"
              "            [--egress-allow LIST] [--egress-required] [--egress-proxy ADDR:PORT]\n"
              "            [--egress-targets LIST]",
              "Runs inside the planner container: asks the provider for one patch for the task and\n"
              "prints it on stdout. The provider's base URL, model and API key are read from files in\n"
              "the secrets directory (base_url, model, api_key). You normally do not run this yourself.");
  p.option("--task", &task_path, "FILE", "the task JSON (default /task/task.json)");
  p.option("--secrets-dir", &secrets_dir, "DIR", "where the secret files are (default /run/secrets)");
  p.option("--snapshot", &snapshot_dir, "DIR",
           "the project the tools read, when the task offers tools (default /task/seed)");
  std::string egress_report, egress_allow;
  bool egress_required = false;
  p.option("--egress-report", &egress_report, "FILE",
           "the egress probe's output from this pod (Kubernetes, k8s.planner_egress): judged before the provider "
           "is called");
  p.option("--egress-allow", &egress_allow, "LIST", "the ADDR:PORT the pod's NetworkPolicy allows, space-separated");
  p.flag("--egress-required", &egress_required, "refuse (exit 4) when the egress policy is not enforced");
  std::string egress_proxy, egress_targets;
  p.option("--egress-proxy", &egress_proxy, "ADDR:PORT",
           "the allow-list proxy (podman, provider.network: allowlist): probe egress here before the provider "
           "is called");
  p.option("--egress-targets", &egress_targets, "LIST",
           "what the probe tries directly, space-separated label=ADDR:PORT (with --egress-proxy)");
  if (auto done = parse_or_exit(p, args)) return *done;
  PlanLog log;
  // The pod's (Kubernetes) or the container's (podman, allowlist) egress,
  // before anything is sent (policy/planner_egress.h, provider/proxy_egress_probe.h).
  if (!egress_report.empty() || !egress_proxy.empty()) {
    std::vector<std::string> allowed, targets;
    std::istringstream words(egress_allow);
    for (std::string w; words >> w;) allowed.push_back(w);
    std::istringstream target_words(egress_targets);
    for (std::string w; target_words >> w;) targets.push_back(w);
    EgressReport r;
    if (!egress_proxy.empty()) {
      r = probe_proxy_egress(egress_proxy, targets);
    } else {
      auto text = read_small_file(egress_report, 1 << 20);
      r = parse_egress_output(text ? *text : std::string());
    }
    PlannerEgressVerdict v = judge_planner_egress(r, egress_proxy.empty() ? allowed : std::vector<std::string>{});
    for (const auto& a : r.attempts) {  // the proxy must be seen refusing, not merely not relaying
      if (a.target == "proxy-unlisted" && a.outcome != "denied" && !a.reached()) {
        v.findings.push_back("the proxy did not refuse an unlisted name (" + a.outcome + ")");
        v.enforced = false;
      }
    }
    log.summary["planner_egress"] = v.to_json(r, allowed);
    std::string why;
    for (const auto& f : v.findings) why += (why.empty() ? "" : "; ") + f;
    log.line(v.enforced ? "planner_egress: enforced (the probe reached nothing but " + egress_allow + ", " +
                              std::to_string(r.ms) + " ms)"
                        : "planner_egress: not enforced: " + why);
    if (!v.enforced && egress_required) {
      log.summary["error"] =
          !egress_proxy.empty()
              ? "provider.network: allowlist: the planner container's egress is not limited to the proxy (" + why +
                    "); the provider was not called"
              : "k8s.planner_egress_required: the planner pod's egress policy is not enforced (" + why +
                    "); the provider was not called. Run on a cluster whose CNI enforces NetworkPolicy, "
                    "or set k8s.planner_egress_required: false to run with it stated";
      log.line(log.summary["error"].get<std::string>());
      return log.finish(kExitRefused);
    }
  }
  ProviderSettings settings;
  for (auto [name, out] : {std::pair{kSecretBaseUrl, &settings.base_url},
                           std::pair{kSecretModel, &settings.model},
                           std::pair{kSecretApiKey, &settings.api_key}}) {
    auto value = read_small_file(secrets_dir + "/" + name, 64 * 1024);
    if (!value || trim_newlines(*value).empty()) {
      log.line(std::string("secret ") + name + " is missing or empty in " + secrets_dir +
               "; run `lazyagent-oci configure`");
      return log.finish(kExitUsage);
    }
    *out = trim_newlines(*value);
  }
  log.key = settings.api_key;
  if (auto st = validate_base_url(settings.base_url); !st) {
    log.line(st.error().message);
    return log.finish(kExitUsage);
  }
  auto task_text = read_small_file(task_path, 4 << 20);
  if (!task_text) {
    log.line(task_text.error().message);
    return log.finish(kExitUsage);
  }
  auto task = task_from_json(*task_text);
  if (!task) {
    log.line(task.error().message);
    return log.finish(kExitUsage);
  }
  settings.connect_timeout_ms = task->connect_timeout_ms;
  settings.total_timeout_ms = task->timeout_ms;
  settings.max_retries = task->max_retries;
  log.summary["task_id"] = task->task_id;
  log.summary["model"] = settings.model;
  log.line("task " + task->task_id + ": " + std::to_string(task->files.size()) + " files, model " + settings.model);

  // The tool loop when the task offers tools and the snapshot is here (the
  // Kubernetes engine does not upload one: the one-shot prompt there).
  struct stat st {};
  const bool loop = task->loop.tools && ::stat(snapshot_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (task->loop.tools && !loop) log.line("no snapshot at " + snapshot_dir + ": the one-shot prompt, no tools");
  ChatReply reply_data;
  if (loop) {
    ToolLimits limits;
    limits.result_bytes = task->loop.tool_result_bytes;
    const SnapshotTools tools(snapshot_dir, limits);
    auto out = run_tool_loop(settings, *task, tools, [&](const std::string& l) { log.line(l); });
    if (!out) {
      log.summary["error"] = redact(out.error().message, settings.api_key);
      log.line("error: " + out.error().message);
      return log.finish(out.error().kind == ErrorKind::kInterrupted ? 130 : kExitPlanner);
    }
    json calls = out->calls;
    json tools_used = json::object();
    for (const auto& c : calls) tools_used[c.value("name", "")] = tools_used.value(c.value("name", ""), 0) + 1;
    log.summary["loop"] = {{"turns", out->turns},
                           {"stop_reason", loop_stop_name(out->stop)},
                           {"tool_calls", calls},
                           {"tools_used", tools_used},
                           {"max_turns", task->loop.max_turns},
                           {"max_tokens", task->loop.max_tokens},
                           {"tool_choice", task->loop.tool_choice}};
    if (!out->tools_refusal.empty()) log.summary["loop"]["tools_refused"] = out->tools_refusal;
    reply_data.content = out->reply;
    reply_data.usage = out->usage;
    reply_data.attempts = out->attempts;
    reply_data.elapsed_ms = out->provider_ms;
    reply_data.response_format = out->response_format;
    reply_data.format_refusals = out->format_refusals;
    reply_data.finish_reason = out->finish_reason;
    reply_data.model = out->provider_model;
    log.line("loop: " + std::to_string(out->turns) + " turn(s), " + std::to_string(calls.size()) +
             " tool call(s), stop_reason " + loop_stop_name(out->stop));
    if (out->stop != LoopStop::kSubmitted && out->stop != LoopStop::kAnswered) {
      log.summary["usage"] = {{"prompt_tokens", out->usage.prompt_tokens},
                              {"completion_tokens", out->usage.completion_tokens},
                              {"total_tokens", out->usage.total_tokens}};
      log.summary["attempts"] = out->attempts;
      const std::string why = std::string("the tool loop stopped without a patch: ") + loop_stop_name(out->stop);
      log.summary["findings"] = findings_json({{"no_patch", "", why}});
      log.summary["error"] = why;
      log.line(why);
      return log.finish(kExitRefused);
    }
  } else {
    int attempts = 0;
    auto one = chat_completion(settings, build_chat_request(*task), [&](const std::string& l) { log.line(l); },
                               &attempts);
    log.summary["attempts"] = attempts;  // on a failure too: `task show` counts them
    if (!one) {
      log.summary["error"] = redact(one.error().message, settings.api_key);
      log.line("error: " + one.error().message);
      return log.finish(one.error().kind == ErrorKind::kInterrupted ? 130 : kExitPlanner);
    }
    reply_data = std::move(*one);
  }
  const ChatReply* reply = &reply_data;
  log.summary["usage"] = {{"prompt_tokens", reply->usage.prompt_tokens},
                          {"completion_tokens", reply->usage.completion_tokens},
                          {"total_tokens", reply->usage.total_tokens}};
  log.summary["attempts"] = reply->attempts;
  log.summary["provider_ms"] = reply->elapsed_ms;
  log.summary["response_format"] = response_format_name(reply->response_format);
  if (!reply->format_refusals.empty()) log.summary["response_format_refusals"] = reply->format_refusals;
  log.summary["finish_reason"] = reply->finish_reason;
  log.summary["provider_model"] = reply->model;
  log.line("reply: " + std::to_string(reply->content.size()) + " bytes, " +
           std::to_string(reply->usage.total_tokens) + " tokens");

  auto patch_text = extract_patch_json(reply->content);
  if (!patch_text) {
    std::string why = patch_text.error().message;
    if (reply->finish_reason == "length") why += " (the reply was cut at the token limit: finish_reason length)";
    log.summary["findings"] = findings_json({{"no_patch", "", why}});
    log.line(why);
    return log.finish(kExitRefused);
  }
  PatchCheck checked = check_patch_text(*patch_text, task->contract);
  auto leaks = secret_findings(checked, {settings.api_key});
  checked.findings.insert(checked.findings.end(), leaks.begin(), leaks.end());
  log.summary["patch_format"] = patch_format_name(checked.format);
  if (!checked.ok()) {
    log.summary["findings"] = findings_json(checked.findings);
    log.line("the model's patch is refused: " + std::to_string(checked.findings.size()) + " finding(s)");
    return log.finish(kExitRefused);
  }
  // stdout carries the patch alone: canonical JSON, or the diff as it came.
  std::cout << checked.stored;
  if (checked.format == PatchFormat::kFiles) std::cout << "\n";
  std::cout << std::flush;
  log.summary["patch_sha256"] = checked.sha256;
  log.line("patch accepted (" + std::string(patch_format_name(checked.format)) + "): " +
           std::to_string(checked.format == PatchFormat::kFiles ? checked.files.files.size()
                                                                 : checked.diff.files.size()) +
           " file(s)");
  return log.finish(0);
}

}  // namespace lazyagent
