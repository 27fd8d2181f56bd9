// `lazyagent-oci verify RUN_ID [--json]`: recompute a run record's hashes
// from what the run store keeps (provenance.h) and say whether it still
// matches. Exit 0: matches; 1: does not (every mismatch named), or the run
// never finished (running, or interrupted: there is no verdict to vouch
// for, whatever the hashes say); 2: unknown run. An intact record of a run
// that ended in an error is said as such ("RECORD INTACT, NOTHING PROVED",
// exit 0, `proved: false`): the record is genuine, the run proved nothing.
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "store/provenance.h"
#include "store/store_sweep.h"
#include "pipeline/apply_run.h"
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

// Why a finished run proved nothing although its record may be intact (""
// when its verdict came from its tests, or from the contract's refusal).
std::string no_proof_reason(const json& record) {
  const std::string status = record.value("status", "");
  const std::string error = record.value("error", record.value("reason", std::string()));
  const std::string why = error.empty() ? "" : ": " + error;
  if (status == "error") {
    return "the run ended in an error before any verdict (" + record.value("category", std::string("infra_error")) +
           "), so it proved nothing about the patch" + why;
  }
  if (status == "planner_error") return "the planner failed before any patch was tested, so the run proved nothing" + why;
  return "";
}

}  // namespace

int cmd_verify(const std::vector<std::string>& args) {
  std::string run_id, key, patch, seed;
  bool as_json = false, require_passed = false;
  ArgParser p("verify", "RUN_ID [--json]\n       verify --key PUB FILE [--patch FILE] [--seed DIR] [--require-passed] [--json]",
              "Recomputes the hashes of a run record from what the run store keeps: the stored patch,\n"
              "the stored seed manifest, the effective policy and the verdict, and checks them against\n"
              "the record's provenance. Exit 0 when it matches, 1 when it does not (each mismatch is\n"
              "named) or when the run never finished (running, or interrupted: no verdict), 2 for an\n"
              "unknown run id. It detects edits after the run; without a signing key it cannot tell a\n"
              "record rewritten with recomputed hashes from a genuine one. An intact record of a run that\n"
              "ended in an error (infra_error, planner_error) is RECORD INTACT, NOTHING PROVED (exit 0,\n"
              "`proved: false` in the JSON): the record is genuine, the run proved nothing.\n\n"
              "With --key PUB, FILE is a signed verdict (a DSSE envelope, `lazyagent-oci attestation RUN_ID`)\n"
              "checked offline, anywhere: its Ed25519 signature under PUB, the in-toto statement's types, and\n"
              "with --patch and --seed that the patch's bytes and the seed's tree digest are its subjects.\n"
              "Exit 0 when all hold; 1 names what failed (signature, type, which subject); 2: unreadable input.");
  p.positional("RUN_ID", &run_id, true, "the run's id (the result's run_id); with --key: the envelope file ('-' = stdin)");
  p.option("--key", &key, "PUB", "check FILE as a signed verdict under this Ed25519 public key (SPKI PEM)");
  p.option("--patch", &patch, "FILE", "with --key: the patch whose bytes must be the statement's \"patch\" subject");
  p.option("--seed", &seed, "DIR", "with --key: the seed whose tree digest must be the statement's \"seed\" subject");
  p.flag("--require-passed", &require_passed, "with --key: fail unless the signed result is PASSED");
  p.flag("--json", &as_json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (!key.empty()) return verify_envelope_command(key, run_id, patch, seed, require_passed, as_json);
  if (!patch.empty() || !seed.empty() || require_passed) {
    return report_error(usage_error("verify: --patch, --seed and --require-passed check a signed verdict: give "
                                    "--key PUB FILE (verify RUN_ID checks the local record)"),
                        as_json);
  }
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
  const std::string no_proof = record.is_object() ? no_proof_reason(record) : "";

  const bool matches = mismatches.empty() && unfinished.empty();
  if (as_json) {
    json m = json::array();
    for (const auto& x : mismatches) m.push_back({{"part", x.part}, {"detail", x.detail}});
    json out = {{"run_id", run_id}, {"matches", matches}, {"finished", unfinished.empty()}, {"mismatches", m}};
    if (record.is_object()) out["status"] = record.value("status", "");
    if (!unfinished.empty()) out["unfinished"] = unfinished;
    // The record is intact, but intact is not proven (an infra_error run).
    out["proved"] = matches && no_proof.empty();
    if (!no_proof.empty()) out["no_proof"] = no_proof;
    if (record.is_object() && record.contains("provenance")) out["provenance"] = record["provenance"];
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  } else {
    std::cout << "run " << escape_for_terminal(run_id) << ": "
              << (!matches                ? (!unfinished.empty() ? "NOT FINISHED, NO VERDICT" : "DOES NOT MATCH")
                  : no_proof.empty()          ? "MATCHES"
                                              : "RECORD INTACT, NOTHING PROVED")
              << "\n";
    if (!unfinished.empty()) std::cout << "  " << escape_for_terminal(unfinished) << "\n";
    if (matches && !no_proof.empty()) {
      std::cout << "  the record matches its provenance (nothing was edited after the run), but "
                << escape_for_terminal(no_proof) << "\n";
    }
    if (matches) {
      const json& pv = record["provenance"];
      auto line = [](const char* label, const std::string& value) {
        std::cout << "  " << label << (value.empty() ? std::string("(none)") : value) << "\n";
      };
      line("patch   ", pv.value("patch_sha256", ""));
      line("seed    ", pv.value("seed_sha256", ""));
      line("policy  ", pv.value("policy_sha256", "") + " (runtime " + pv.value("runtime", "") + ")");
      line("image   ", pv.value("image_digest", ""));
      line("verdict ", escape_for_terminal(pv.value("verdict", json::object()).value("status", "")));
    }
    for (const auto& x : mismatches) std::cout << "  " << x.part << ": " << escape_for_terminal(x.detail) << "\n";
  }
  return matches ? kExitPassed : kExitFailed;
}

}  // namespace lazyagent
