#include "pipeline/planner_run.h"

#include <chrono>
#include <ctime>
#include <sstream>

#include "util/elapsed.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxPlannerOutput = 1 << 20;

}  // namespace

json parse_planner_summary(const std::string& log) {
  static const std::string kPrefix = "planner-summary: ";
  const auto pos = log.rfind(kPrefix);
  if (pos == std::string::npos) return nullptr;
  const auto end = log.find('\n', pos);
  json j = json::parse(log.substr(pos + kPrefix.size(), end == std::string::npos ? std::string::npos : end - pos - kPrefix.size()),
                       nullptr, false);
  return j.is_object() ? j : json(nullptr);
}

json task_record(const PlannerOutcome& o, const std::string& run_id) {
  const std::string status = o.timed_out ? "timeout"
                             : o.exit_code == 0 ? "patch"
                             : o.exit_code == 3 ? "provider_error"
                             : o.exit_code == 4 ? "refused"
                                                : "error";
  json s = o.summary.is_object() ? o.summary : json::object();
  json rec = {{"task_id", o.task_id},
              {"run_id", run_id},
              {"status", status},
              {"exit_code", o.exit_code},
              {"container_id", o.container_id},
              {"image_digest", o.image_digest},
              {"model", s.value("model", "")},
              {"usage", s.value("usage", json::object())},
              {"attempts", s.value("attempts", 0)},
              {"provider_ms", s.value("provider_ms", 0L)},
              {"response_format", s.value("response_format", "")},
              {"response_format_refusals", s.value("response_format_refusals", json::array())},
              {"finish_reason", s.value("finish_reason", "")},
              {"provider_model", s.value("provider_model", "")},
              {"ms", o.ms},
              {"patch_sha256", s.value("patch_sha256", "")},
              {"patch_bytes", o.patch_json.size()},
              {"error", s.value("error", o.timed_out ? "the planner did not finish in time" : "")},
              {"findings", s.value("findings", json::array())},
              {"updated_at", static_cast<long>(std::time(nullptr))}};
  if (s.contains("loop") && s["loop"].is_object()) rec["loop"] = s["loop"];
  if (s.contains("planner_egress")) rec["planner_egress"] = s["planner_egress"];  // k8s.planner_egress  // turns, stop_reason, every tool call
  if (o.objects.is_object()) {
    for (const auto& [k, v] : o.objects.items()) rec[k] = v;
  }
  return rec;
}

Error planner_error(const PlannerOutcome& o) {
  std::string why = o.timed_out ? "the planner did not finish within its deadline"
                    : o.summary.is_object() ? o.summary.value("error", "")
                                            : "";
  if (why.empty()) {
    std::istringstream in(o.log);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("planner: ", 0) == 0) why = line.substr(9, 300);
    }
  }
  if (why.empty()) why = "the planner exited " + std::to_string(o.exit_code);
  return Error{ErrorKind::kPlanner, "planner task " + o.task_id + ": " + why +
                                        " (see `lazyagent-oci task logs " + o.task_id + "`)"};
}

Result<PlannerOutcome> run_planner(Engine& engine, const RunStore& store, const Config& config,
                                   const PlannerTask& task, const SeedSnapshot& seed, const std::string& run_id,
                                   const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  PlannerOutcome o;
  o.task_id = task.task_id;
  if (auto st = engine.check_planner(config); !st) return st.error();
  auto digest = engine.planner_image_digest(config);
  if (!digest) return digest.error();
  o.image_digest = *digest;

  PlannerSpec spec;
  spec.run_id = run_id;
  spec.config = &config;
  spec.task = &task;
  spec.seed = &seed;
  auto prepared = engine.prepare_planner(spec);
  if (!prepared) return prepared.error().context("creating the planner");
  Container& planner = **prepared;  // removes itself on every path out
  // The engine could not give the tools their snapshot (k8s without a registry): said, not silent.
  if (const json d = planner.describe(); progress && d.contains("snapshot") && d["snapshot"].contains("reason")) {
    progress("planner: " + d["snapshot"].value("reason", std::string()));
  }
  if (auto st = planner.create(); !st) return st.error().context("creating the planner");
  o.container_id = planner.id();
  if (progress) progress("planner: asking the provider (task " + task.task_id + ")");
  if (auto st = planner.start(); !st) return st.error().context("starting the planner");
  auto exit = planner.wait(static_cast<long>(config.timeouts.planner_seconds) * 1000);
  if (!exit) return exit.error();
  o.timed_out = exit->timed_out;
  if (!o.timed_out) o.exit_code = exit->exit_code;
  auto logs = planner.logs(2 * kMaxPlannerOutput);
  if (!logs) return logs.error().context("reading the planner's output");
  o.patch_json = logs->out;
  o.log = to_valid_utf8(logs->err);
  o.summary = parse_planner_summary(o.log);
  o.container_id = planner.id();
  o.objects = planner.describe();
  if (auto st = planner.remove(); !st) return st.error();
  o.ms = ms_since(t0);
  (void)store.write_text("tasks", task.task_id + ".log", o.log);
  json rec = task_record(o, run_id);
  rec["context"] = task.context;  // what the task held and what was cut, why (`task show`)
  (void)store.write_in("tasks", task.task_id, rec);
  return o;
}

}  // namespace lazyagent
