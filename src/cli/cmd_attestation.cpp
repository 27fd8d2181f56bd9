// Signed verdicts at the CLI (docs/signing.md):
//   attestation RUN_ID [--json]     the envelope a signed run wrote
//   verify --key PUB FILE [--patch FILE] [--seed DIR] [--require-passed] [--json]
//                                   an envelope checked offline, with nothing
//                                   but the public key and the files given
// The offline check: the envelope's form, its payloadType, an Ed25519
// signature over PAE under the given key (the keyid is a hint, never a reason
// to accept), the Statement's _type and predicateType, and, where given, that
// the patch's bytes and the seed's tree digest are the statement's subjects.
// Nothing in the payload is read before its signature holds. Exit 0 when all
// hold, 1 naming each failure, 2 for a key or file that cannot be read.
#include <fstream>
#include <iostream>

#include "attest/dsse.h"
#include "attest/signing_key.h"
#include "attest/test_statement.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "contract/seed_snapshot.h"
#include "pipeline/attest_run.h"
#include "store/provenance.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

Result<std::string> read_bounded_file(const std::string& path, std::size_t max, const std::string& what) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return usage_error(what + " " + path + ": cannot open the file");
    in = &file;
  }
  std::string data;
  char buf[65536];
  while (in->read(buf, sizeof buf) || in->gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in->gcount()));
    if (data.size() > max) return usage_error(what + " " + path + ": larger than " + std::to_string(max) + " bytes");
  }
  return data;
}

// The seed read as the statement says it was read (its subject's annotations).
Result<std::string> seed_tree_digest(const std::string& dir, const json& statement) {
  SeedConfig sc;
  if (statement.contains("subject") && statement["subject"].is_array()) {
    for (const auto& s : statement["subject"]) {
      if (!s.is_object() || s.value("name", json()) != json(kSeedSubject)) continue;
      const json a = s.value("annotations", json::object());
      if (!a.is_object()) break;
      if (a.value("source", json()) == json("git") || a.value("source", json()) == json("directory")) {
        sc.source = a["source"].get<std::string>();
      }
      if (a.contains("exclude") && a["exclude"].is_array()) {
        for (const auto& g : a["exclude"]) {
          if (g.is_string()) sc.exclude.push_back(g.get<std::string>());
        }
      }
      if (a.contains("include_git") && a["include_git"].is_boolean()) sc.include_git = a["include_git"].get<bool>();
    }
  }
  auto snap = snapshot_seed_source(dir, sc);
  if (!snap) return snap.error().context("--seed " + dir);
  return snap->sha256;
}

struct OfflineCheck {
  std::vector<StatementFinding> findings;
  json statement;       // set once the signature holds
  std::string envelope_keyid;
  bool signature_ok = false;
};

OfflineCheck check_envelope(const std::string& text, const VerifyKey& key) {
  OfflineCheck c;
  std::string line = text;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line.find('\n') != std::string::npos) {
    c.findings.push_back({"envelope", "the file holds more than one line: give one envelope (one line of a .intoto.jsonl)"});
    return c;
  }
  auto env = dsse_parse(line);
  if (!env) {
    c.findings.push_back({"envelope", env.error().message});
    return c;
  }
  if (!env->signatures.empty()) c.envelope_keyid = env->signatures.front().keyid;
  if (env->payload_type != kInTotoPayloadType) {
    c.findings.push_back({"type", "payloadType is \"" + to_valid_utf8(env->payload_type) + "\", expected \"" +
                                      kInTotoPayloadType + "\""});
  }
  if (!dsse_verify(*env, key)) {
    c.findings.push_back({"signature", "no signature verifies under the key given (key id " + key.keyid() +
                                           (c.envelope_keyid.empty() ? std::string()
                                                                     : "; the envelope names " + to_valid_utf8(c.envelope_keyid)) +
                                           "): the envelope was changed, or signed with another key"});
    return c;
  }
  c.signature_ok = true;
  c.statement = json::parse(env->payload, nullptr, false);
  if (c.statement.is_discarded()) {
    c.findings.push_back({"statement", "the signed payload is not JSON"});
    c.statement = json();
  }
  return c;
}

}  // namespace

int verify_envelope_command(const std::string& key_path, const std::string& file, const std::string& patch,
                            const std::string& seed, bool require_passed, bool as_json) {
  auto key = VerifyKey::load(key_path);
  if (!key) return report_error(key.error().context("verify"), as_json);
  auto text = read_bounded_file(file, kMaxEnvelopeBytes, "verify:");
  if (!text) return report_error(text.error(), as_json);
  StatementExpectation expect;
  if (!patch.empty()) {
    auto p = read_bounded_file(patch, std::size_t{64} << 20, "--patch");
    if (!p) return report_error(p.error().context("verify"), as_json);
    expect.patch_sha256 = sha256_hex(*p);
  }

  OfflineCheck c = check_envelope(*text, *key);
  if (c.signature_ok && !c.statement.is_null()) {
    if (!seed.empty()) {
      auto d = seed_tree_digest(seed, c.statement);
      if (!d) return report_error(d.error().context("verify"), as_json);
      expect.seed_sha256 = *d;
    }
    for (auto& f : check_test_statement(c.statement, expect)) c.findings.push_back(std::move(f));
  }
  const json pred = c.statement.is_object() ? c.statement.value("predicate", json::object()) : json::object();
  const std::string result = pred.is_object() && pred.value("result", json()).is_string() ? pred["result"].get<std::string>() : "";
  const json run = pred.is_object() ? pred.value("run", json::object()) : json::object();
  if (require_passed && c.signature_ok && result != "PASSED") {
    c.findings.push_back({"result", "the signed verdict is " + (result.empty() ? std::string("(none)") : result) +
                                        ", not PASSED (--require-passed)"});
  }
  const bool ok = c.findings.empty();

  if (as_json) {
    json f = json::array();
    for (const auto& x : c.findings) f.push_back({{"part", x.part}, {"detail", x.detail}});
    json out = {{"file", file},          {"verified", ok},          {"keyid", key->keyid()},
                {"signature", c.signature_ok}, {"findings", f},
                {"checked", {{"patch", !expect.patch_sha256.empty()}, {"seed", !expect.seed_sha256.empty()}}}};
    if (c.signature_ok) {
      out["result"] = result;
      out["run_id"] = run.is_object() ? run.value("id", json("")) : json("");
      out["subject"] = c.statement.value("subject", json::array());
    }
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  } else {
    std::cout << escape_for_terminal(file) << ": " << (ok ? "VERIFIED" : "NOT VERIFIED") << "\n";
    std::cout << "  key       " << key->keyid() << (c.signature_ok ? " (signature valid)" : "") << "\n";
    if (c.signature_ok) {
      std::cout << "  result    " << escape_for_terminal(result) << "\n";
      if (run.is_object()) {
        auto text = [&](const char* k) {
          const json v = run.value(k, json(""));
          return escape_for_terminal(v.is_string() ? v.get<std::string>() : v.dump());
        };
        std::cout << "  run       " << text("id") << ", finished " << text("finishedOn") << "\n";
      }
      const std::string ps = subject_sha256(c.statement, kPatchSubject), ss = subject_sha256(c.statement, kSeedSubject);
      std::cout << "  patch     " << escape_for_terminal(ps)
                << (expect.patch_sha256.empty() ? " (not compared: no --patch)" : "") << "\n";
      std::cout << "  seed      " << escape_for_terminal(ss)
                << (expect.seed_sha256.empty() ? " (not compared: no --seed)" : "") << "\n";
    }
    for (const auto& x : c.findings) std::cout << "  " << x.part << ": " << escape_for_terminal(x.detail) << "\n";
  }
  return ok ? kExitPassed : kExitFailed;
}

int cmd_attestation(const std::vector<std::string>& args) {
  std::string run_id;
  bool as_json = false;
  ArgParser p("attestation", "RUN_ID [--json]",
              "Prints the signed verdict of a run made with --sign-key (or signing.key): a DSSE envelope\n"
              "over an in-toto test-result statement, one JSON line, as stored in the run store\n"
              "(artifacts/RUN_ID.intoto.jsonl). `lazyagent-oci verify --key PUB FILE` checks it offline, and so\n"
              "do openssl and python3 alone (docs/signing.md). With --json: the attestation, the\n"
              "envelope and its statement decoded (not verified: that is `verify --key`).");
  p.positional("RUN_ID", &run_id, true, "the run's id (the result's run_id)");
  p.flag("--json", &as_json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  auto rec = store.read(run_id);
  if (!rec) {
    if (rec.error().kind == ErrorKind::kUsage) {
      return report_error(usage_error("attestation: no run '" + run_id + "' in " + store.runs_dir()), as_json);
    }
    return report_error(rec.error().context("attestation"), as_json);
  }
  const json a = rec->value("attestation", json());
  if (!a.is_object()) {
    const std::string status = rec->value("status", "");
    return report_error(usage_error("attestation: run " + run_id + " (" + status + ") has no signed verdict: " +
                                    (status == "passed" || status == "failed"
                                         ? std::string("it ran without --sign-key or signing.key")
                                         : std::string("only a passed or failed verdict is signed"))),
                        as_json);
  }
  // The record holds the envelope (durable); the artifacts/ file is its copy,
  // put back when a crash lost it (attest_run.h).
  const std::string sha = a.value("sha256", "");
  Result<std::string> line = a.contains("envelope") && a["envelope"].is_string()
                                 ? Result<std::string>(a["envelope"].get<std::string>())
                                 : store.read_text(kArtifactsDir, attestation_artifact_name(run_id));
  if (!line) return report_error(line.error().context("attestation: run " + run_id), as_json);
  if (sha256_hex(*line) != sha) {
    return report_error(engine_error("attestation: run " + run_id + ": the stored envelope hashes to " + sha256_hex(*line) +
                                     ", the record says " + sha + " (changed after the run)"),
                        as_json);
  }
  if (auto file = store.read_text(kArtifactsDir, attestation_artifact_name(run_id)); !file || *file != *line) {
    (void)store.write_text(kArtifactsDir, attestation_artifact_name(run_id), *line);
  }
  if (!as_json) {
    std::cout << *line;
    return kExitPassed;
  }
  json shown = a;
  shown.erase("envelope");
  json out = {{"run_id", run_id}, {"attestation", shown}};
  out["envelope"] = json::parse(*line, nullptr, false);
  if (auto env = dsse_parse(*line)) out["statement"] = json::parse(env->payload, nullptr, false);
  std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  return kExitPassed;
}

}  // namespace lazyagent
