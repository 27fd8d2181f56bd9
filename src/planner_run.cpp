#include "planner_run.h"

#include <chrono>

#include "log_stream.h"
#include "ownership.h"
#include "planner_policy.h"
#include "tar_writer.h"
#include "terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxPlannerOutput = 1 << 20;

// Removes the planner container on every path out of run_planner.
class PlannerGuard {
 public:
  explicit PlannerGuard(PodmanClient& p) : podman_(p) {}
  ~PlannerGuard() {
    if (!id_.empty()) (void)podman_.remove(id_);
  }
  void hold(const std::string& id) { id_ = id; }
  Status remove_now() {
    auto st = id_.empty() ? ok_status() : podman_.remove(id_);
    if (st) id_.clear();
    return st;
  }

 private:
  PodmanClient& podman_;
  std::string id_;
};

Status check_secrets(PodmanClient& podman, const Config& config) {
  std::vector<std::string> missing;
  for (const auto& name : {config.provider.base_url_secret, config.provider.model_secret,
                           config.provider.api_key_secret}) {
    auto exists = podman.secret_exists(name);
    if (!exists) return exists.error();
    if (!*exists) missing.push_back(name);
  }
  if (missing.empty()) return ok_status();
  std::string names;
  for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
  return usage_error("the provider is not configured (missing podman secrets: " + names +
                     "): export CODING_AGENT_BASE_URL, CODING_AGENT_MODEL and CODING_AGENT_API_KEY, "
                     "then run `lazyagent-oci configure`");
}

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
  return json{{"task_id", o.task_id},
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
}

Result<PlannerOutcome> run_planner(PodmanClient& podman, const RunStore& store,
                                   const Config& config, const PlannerTask& task,
                                   const std::string& run_id, const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  PlannerOutcome o;
  o.task_id = task.task_id;
  if (auto st = check_secrets(podman, config); !st) return st.error();
  auto image = podman.image_inspect(config.images.planner, "images.planner");
  if (!image) return image.error().context("the planner image");
  o.image_digest = image->value("Digest", image->value("Id", ""));

  PlannerRequest req = planner_request_from_config(config);
  req.name = "lazyagent-planner-" + run_id;
  req.labels = owner_labels(current_owner(), "planner", run_id);
  PlannerGuard guard(podman);
  auto created = podman.create(build_planner_spec(req));
  if (!created) return created.error().context("creating the planner");
  guard.hold(created->id);
  o.container_id = created->id;

  auto tar = write_tar({{"task.json", task_to_json(task).dump(), 0644, false}});
  if (!tar) return tar.error();
  if (auto st = podman.put_archive(created->id, kTaskDir, *tar); !st) return st.error().context("uploading the task");
  if (progress) progress("planner: asking the provider (task " + task.task_id + ")");
  if (auto st = podman.start(created->id); !st) return st.error().context("starting the planner");
  auto code = podman.wait(created->id, static_cast<long>(req.timeout_seconds) * 1000);
  if (!code && code.error().kind == ErrorKind::kTimeout) {
    o.timed_out = true;
    (void)podman.kill(created->id);
  } else if (!code) {
    return code.error();
  } else {
    o.exit_code = *code;
  }
  auto raw = podman.logs(created->id, 2 * kMaxPlannerOutput);
  if (!raw) return raw.error().context("reading the planner's output");
  DemuxedLogs d = demux_logs(raw->body, 2 * kMaxPlannerOutput);
  o.patch_json = d.out;
  o.log = to_valid_utf8(d.err);
  o.summary = parse_planner_summary(o.log);
  if (auto st = guard.remove_now(); !st) return st.error();
  o.ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - t0).count());
  (void)store.write_text("tasks", task.task_id + ".log", o.log);
  (void)store.write_in("tasks", task.task_id, task_record(o, run_id));
  return o;
}

}  // namespace lazyagent
