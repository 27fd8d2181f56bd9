// `lazyagent-oci sandboxes [N]` and `lazyagent-oci reap`.
#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>

#include <algorithm>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/engine.h"
#include "engine/warm_pool.h"
#include "pipeline/session.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// The engine that answers for `sandboxes`, or why there is none (the note).
std::unique_ptr<Engine> listing_engine(const RunStore& store, const BackendOptions& backend,
                                       const std::string& config_path, std::string* note) {
  auto config = load_config_or_default(config_path);
  if (!config) {
    *note = config.error().message;
    return nullptr;
  }
  auto factory = engine_factory(backend, *config, store);
  if (!factory) {
    *note = factory.error().message;
    return nullptr;
  }
  return (*factory)();
}

}  // namespace

json sandboxes_json(const RunStore& store, std::size_t n, const BackendOptions& backend, const std::string& config_path) {
  std::vector<std::string> problems;
  auto records = store.recent(n, &problems);

  std::string engine_note;
  std::unique_ptr<Engine> engine = listing_engine(store, backend, config_path, &engine_note);
  // Asked until it first fails to answer (then the note says why).
  auto exists_in_engine = [&](const std::string& id) -> json {
    if (!engine || !engine_note.empty()) return nullptr;
    auto e = engine->sandbox_exists(id);
    if (!e) {
      engine_note = e.error().message;
      return nullptr;
    }
    return *e;
  };

  json rows = json::array();
  for (const auto& r : records) {
    const std::string status = r.value("status", "");
    // Why not passed: the verdict's reason, else the error that ended the
    // run (error, interrupted, planner_error records hold it there).
    std::string reason = r.value("reason", "");
    if (reason.empty()) reason = r.value("error", "");
    // An unfinished record whose process is gone was killed: say so until
    // `reap` (or the next start) closes it.
    bool owner_gone = false;
    if (!is_finished_status(status)) {
      owner_gone = !run_owner_alive(r);
      if (owner_gone) reason = "its process is gone (killed or crashed): `lazyagent-oci reap` closes it as interrupted";
    }
    const std::string id = r.value("sandbox_id", "");
    // Only the engine that ran it can tell (records before `backend` was
    // recorded are podman's); otherwise unknown.
    json exists = nullptr;
    if (id.empty()) {
      exists = false;
    } else if (engine && r.value("backend", std::string("podman")) == engine->name()) {
      exists = exists_in_engine(id);
    }
    rows.push_back({{"run_id", r.value("run_id", "")},
                    {"kind", r.value("kind", "")},
                    {"status", status},
                    {"sandbox_id", id},
                    {"exists", exists},
                    {"tests_passed", r.value("tests_passed", false)},
                    {"test_exit_code", r.value("test_exit_code", -1)},
                    {"reason", reason},
                    {"owner_alive", is_finished_status(status) ? json(nullptr) : json(!owner_gone)},
                    {"updated_at", r.value("updated_at", 0L)}});
  }
  // Warm spares (warm_pool.h): the engine's, not the run store's.
  json spares = json::array();
  if (WarmPool* pool = engine ? engine->warm_pool() : nullptr; pool != nullptr && engine_note.empty()) {
    if (auto list = pool->spares_json(std::time(nullptr)); list) {
      spares = std::move(*list);
    } else {
      engine_note = list.error().message;
    }
  }
  // Open sessions (session.h): their working copies outlive each command.
  const json sessions = sessions_json(SessionStore(store), static_cast<std::int64_t>(std::time(nullptr)));
  json out = {{"state_dir", store.dir()}, {"sandboxes", rows}, {"spares", spares}, {"sessions", sessions},
              {"problems", problems}};
  if (!engine_note.empty()) out["engine"] = engine_note;
  return out;
}

int cmd_sandboxes(const std::vector<std::string>& args) {
  std::string count = "20", config_path;
  bool as_json = false;
  BackendOptions backend;
  ArgParser p("sandboxes", "[N] [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--config FILE] [--json]",
              "Lists the sandboxes of the N most recent runs (default 20) from the run store, and\n"
              "whether each still exists in the engine that ran it (it should not: they are removed;\n"
              "? when the engine given is not the run's, or cannot be asked), then the warm spares\n"
              "podman holds (`warm`).");
  p.positional("N", &count, false, "how many runs to show");
  add_backend_options(p, &backend);
  p.option("--config", &config_path, "FILE", "config file (podman: its runtime's service; Kubernetes: its k8s.namespace)");
  p.flag("--json", &as_json, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  long n = 0;
  try {
    n = std::stol(count);
  } catch (...) {
    n = -1;
  }
  if (n < 1 || n > 100000) return report_error(usage_error("sandboxes: N must be a positive integer, got '" + count + "'"), as_json);

  const RunStore store = default_run_store();
  const json out = sandboxes_json(store, static_cast<std::size_t>(n), backend, config_path);
  const json& rows = out["sandboxes"];
  const json& spares = out["spares"];
  const std::string engine_note = out.value("engine", "");
  if (as_json) {
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
    return 0;
  }
  // Columns as wide as their widest value (planner_error, interrupted).
  std::size_t status_w = 6;
  for (const auto& row : rows) status_w = std::max(status_w, row["status"].get<std::string>().size());
  std::cout << std::left << std::setw(28) << "RUN" << std::setw(static_cast<int>(status_w + 2)) << "STATUS"
            << std::setw(14) << "SANDBOX" << std::setw(9) << "EXISTS" << "REASON\n";
  for (const auto& row : rows) {
    const std::string exists = row["exists"].is_null() ? "?" : row["exists"].get<bool>() ? "YES" : "no";
    std::string reason = row["reason"].get<std::string>();
    if (reason.size() > 100) reason = reason.substr(0, 97) + "...";
    std::cout << std::setw(28) << row["run_id"].get<std::string>() << std::setw(static_cast<int>(status_w + 2))
              << row["status"].get<std::string>() << std::setw(14)
              << row["sandbox_id"].get<std::string>().substr(0, 12) << std::setw(9) << exists
              << escape_for_terminal(to_valid_utf8(reason)) << "\n";
  }
  if (rows.empty()) std::cout << "(no runs recorded in " << store.runs_dir() << ")\n";
  for (const auto& s : spares) {
    std::cout << "spare " << s["name"].get<std::string>() << " " << s["state"].get<std::string>()
              << (s["claimed"].get<bool>() ? " claimed by " + s["run_id"].get<std::string>()
                                           : " expires in " + std::to_string(s["expires_in"].get<long>()) + " s")
              << "\n";
  }
  for (const auto& s : out["sessions"]) {
    std::cout << "session " << s.value("session_id", "") << " " << s.value("execs", 0) << " command(s) "
              << (s.contains("expired") ? "expired" : "expires in " + std::to_string(s.value("expires_in", 0L)) + " s")
              << "\n";
  }
  if (!engine_note.empty()) std::cerr << "note: the " << backend.backend << " engine did not answer, EXISTS unknown: " << escape_for_terminal(engine_note) << "\n";
  for (const auto& pr : out["problems"]) std::cerr << "note: " << escape_for_terminal(pr.get<std::string>()) << "\n";
  return 0;
}

int cmd_reap(const std::vector<std::string>& args) {
  bool all = false, as_json = false;
  std::string config_path;
  BackendOptions backend;
  ArgParser p("reap", "[--all] [--backend podman|k8s] [--namespace NS] [--kubeconfig FILE] [--config FILE] [--json]",
              "Removes what runs whose owning process is gone left behind, e.g. after `kill -9`: on podman,\n"
              "lazyagent-oci containers (found by label), the internal networks of egress allow-lists\n"
              "(environment.egress, provider.network: allowlist), private seed copies and every unclaimed\n"
              "warm spare (`warm`); on Kubernetes (--backend k8s), the Jobs, pods, ConfigMaps and\n"
              "NetworkPolicies labelled io.lazyagent.run. On both it removes the run store's interrupted\n"
              "writes and sessions past their idle TTL or maximum age, and closes those runs' records as\n"
              "`interrupted`, with the reason.\n"
              "Runs in progress, and runs started on other hosts, are left alone (what they use unless\n"
              "--all is given; their records always).");
  p.flag("--all", &all, "also remove what runs still in progress use");
  add_backend_options(p, &backend);
  p.option("--config", &config_path, "FILE", "config file (Kubernetes: its k8s.namespace)");
  p.flag("--json", &as_json, "print one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), as_json);
  auto factory = engine_factory(backend, *config, default_run_store());
  if (!factory) return report_error(factory.error(), as_json);
  const auto engine = (*factory)();
  auto report = engine->reap(all);
  if (!report) return report_error(report.error(), as_json);
  // Warm spares are made to outlive their maker; `reap` removes them all.
  if (WarmPool* pool = engine->warm_pool()) {
    if (auto spares = pool->remove_spares(); spares) {
      report->removed.insert(report->removed.end(), spares->begin(), spares->end());
    } else {
      report->errors.push_back(spares.error().message);
    }
  }
  // Sessions past their idle TTL or maximum age (session.h): the run store's,
  // swept whatever the engine; after the engine's reap, so that a killed
  // command's container is gone before its copy.
  for (auto& closed : reap_sessions(SessionStore(default_run_store()), static_cast<std::int64_t>(std::time(nullptr)),
                                    &report->errors, engine.get())) {
    report->removed.push_back("session " + closed);
  }
  if (as_json) {
    json out = {{"backend", backend.backend},
                {"removed", report->removed},
                {"left_running", report->left_running},
                {"work_dirs_removed", report->work_dirs_removed},
                {"temp_files_removed", report->temp_files_removed},
                {"records_closed", report->records_closed},
                {"cgroups_removed", report->cgroups_removed},
                {"networks_removed", report->networks_removed},
                {"errors", report->errors}};
    // Where the engine works beyond the config (Kubernetes: its namespace).
    if (const auto where = engine->placement().settings; where.is_object() && where.contains("namespace")) {
      out["namespace"] = where["namespace"];
    }
    std::cout << out.dump(2) << std::endl;
  } else {
    for (const auto& r : report->removed) std::cout << "removed " << r << "\n";
    for (const auto& r : report->left_running) std::cout << "left running (owner alive) " << r << "\n";
    for (const auto& r : report->work_dirs_removed) std::cout << "removed private copy of " << r << "\n";
    for (const auto& r : report->temp_files_removed) std::cout << "removed interrupted write " << escape_for_terminal(r) << "\n";
    for (const auto& r : report->records_closed) std::cout << "closed the record of " << r << " as interrupted (its process is gone)\n";
    for (const auto& r : report->cgroups_removed) std::cout << "removed the empty cgroup /lazyagent/" << r << "\n";
    for (const auto& r : report->networks_removed) std::cout << "removed the egress allow-list network " << r << "\n";
    for (const auto& e : report->errors) std::cerr << "error: " << escape_for_terminal(e) << "\n";
    if (report->removed.empty() && report->work_dirs_removed.empty() && report->temp_files_removed.empty() &&
        report->records_closed.empty() && report->cgroups_removed.empty() && report->networks_removed.empty()) {
      std::cout << "nothing to reap\n";
    }
  }
  return report->errors.empty() ? 0 : kExitEngine;
}

}  // namespace lazyagent
