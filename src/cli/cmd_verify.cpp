// `lazyagent-oci verify RUN_ID [--json]`: recompute a run record's hashes
// from what the run store keeps (provenance.h) and say whether it still
// matches. Exit 0: matches; 1: does not (every mismatch named), or the run
// never finished (running, or interrupted: there is no verdict to vouch
// for, whatever the hashes say); 2: unknown run.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "store/provenance.h"
#include "store/store_sweep.h"
#include "pipeline/run_apply.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

// Why a record is not a finished run ("" when it is one): still at work,
// killed before it could say (not yet closed by reap), or interrupted.
std::string unfinished_reason(const json& record) {
  const std::string status = record.value("status", "");
  if (status == "interrupted") {
    return "the run was interrupted before its verdict: " + record.value("error", std::string("(no reason recorded)"));
  }
  if (is_finished_status(status)) return "";
  const std::string shown = status.empty() ? "(none)" : status;
  if (run_owner_alive(record)) return "the run is still in progress (status " + shown + ")";
  return "the run never finished (status " + shown +
         ") and its process is gone: `lazyagent-oci reap` closes the record as interrupted";
}

}  // namespace

int cmd_verify(const std::vector<std::string>& args) {
  std::string run_id;
  bool as_json = false;
  ArgParser p("verify", "RUN_ID [--json]",
              "Recomputes the hashes of a run record from what the run store keeps: the stored patch,\n"
              "the stored seed manifest, the effective policy and the verdict, and checks them against\n"
              "the record's provenance. Exit 0 when it matches, 1 when it does not (each mismatch is\n"
              "named) or when the run never finished (running, or interrupted: no verdict), 2 for an\n"
              "unknown run id. It detects edits after the run; without a signing key it cannot tell a\n"
              "record rewritten with recomputed hashes from a genuine one.");
  p.positional("RUN_ID", &run_id, true, "the run's id (the result's run_id)");
  p.flag("--json", &as_json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();

  std::vector<ProvenanceMismatch> mismatches;
  std::string unfinished;
  json record;
  auto rec = store.read(run_id);
  if (!rec) {
    if (rec.error().kind == ErrorKind::kUsage) {
      return report_error(usage_error("verify: no run '" + run_id + "' in " + store.runs_dir()), as_json);
    }
    mismatches.push_back({"record", rec.error().message});
  } else {
    record = std::move(*rec);
    mismatches = check_provenance(record, load_stored_artifacts(store, run_id, record));
    unfinished = unfinished_reason(record);
  }

  const bool matches = mismatches.empty() && unfinished.empty();
  if (as_json) {
    json m = json::array();
    for (const auto& x : mismatches) m.push_back({{"part", x.part}, {"detail", x.detail}});
    json out = {{"run_id", run_id}, {"matches", matches}, {"finished", unfinished.empty()}, {"mismatches", m}};
    if (record.is_object()) out["status"] = record.value("status", "");
    if (!unfinished.empty()) out["unfinished"] = unfinished;
    if (record.is_object() && record.contains("provenance")) out["provenance"] = record["provenance"];
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  } else {
    std::cout << "run " << escape_for_terminal(run_id) << ": "
              << (matches ? "MATCHES" : !unfinished.empty() ? "NOT FINISHED, NO VERDICT" : "DOES NOT MATCH") << "\n";
    if (!unfinished.empty()) std::cout << "  " << escape_for_terminal(unfinished) << "\n";
    if (matches) {
      const json& pv = record["provenance"];
      std::cout << "  patch   " << pv.value("patch_sha256", "") << "\n"
                << "  seed    " << pv.value("seed_sha256", "") << "\n"
                << "  policy  " << pv.value("policy_sha256", "") << " (runtime " << pv.value("runtime", "") << ")\n"
                << "  image   " << pv.value("image_digest", "") << "\n"
                << "  verdict " << escape_for_terminal(pv.value("verdict", json::object()).value("status", "")) << "\n";
    }
    for (const auto& x : mismatches) std::cout << "  " << x.part << ": " << escape_for_terminal(x.detail) << "\n";
  }
  return matches ? kExitPassed : kExitFailed;
}

}  // namespace lazyagent
