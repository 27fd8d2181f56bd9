#include "pipeline/attest_run.h"

#include <ctime>

#include "attest/dsse.h"
#include "pipeline/sandbox_run.h"
#include "store/provenance.h"
#include "util/digest.h"
#include "util/git_process.h"

namespace lazyagent {

using nlohmann::json;

namespace {

std::string utc_now_rfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// HEAD of a git seed ("" when it has none, e.g. a repository with no commit).
std::string seed_head_commit(const std::string& seed_dir) {
  auto r = run_git(seed_dir, {"rev-parse", "--verify", "--quiet", "HEAD^{commit}"}, 4096);
  if (!r || r->exit_code != 0) return "";
  std::string out = r->out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.size() == 40 || out.size() == 64 ? out : "";
}

}  // namespace

std::string attestation_artifact_name(const std::string& run_id) { return run_id + ".intoto.jsonl"; }

bool is_signed_verdict(const RunResult& r) {
  return !r.baseline && (r.status == RunStatus::kPassed || r.status == RunStatus::kFailed);
}

TestStatementInput statement_input(const ProofRequest& req, const RunResult& r, const std::string& backend) {
  TestStatementInput in;
  in.patch_sha256 = sha256_hex(req.patch_json);  // the bytes as given, not the stored canonical form
  in.seed_sha256 = r.seed_sha256;
  const json& src = r.seed_source;
  const std::string kind = src.is_object() ? src.value("kind", "") : "";
  if (kind == "git") in.seed_git_commit = seed_head_commit(req.config.seed);
  in.seed_read = {{"source", kind.empty() ? req.config.seed_options.source : kind},
                  {"exclude", req.config.seed_options.exclude},
                  {"include_git", req.config.seed_options.include_git}};
  in.image = r.image;
  in.image_digest = r.image_digest;
  in.passed = r.tests_passed;
  in.policy_sha256 = canonical_sha256(r.policy.is_object() ? r.policy : json::object());
  if (r.policy.is_object() && r.policy.contains("seccomp") && r.policy["seccomp"].is_object()) {
    in.seccomp_sha256 = r.policy["seccomp"].value("sha256", "");
  }
  in.test_command = req.config.test_command;
  if (r.environment.is_object()) {
    in.environment_image = r.environment.value("image", "");
    in.environment_digest = r.environment.value("digest", "");
  }
  for (const auto& c : r.tests.cases) {
    if (c.outcome == TestOutcome::kPassed) in.passed_tests.push_back(c.id);
    if (c.outcome == TestOutcome::kFailed) in.failed_tests.push_back(c.id);
  }
  in.run_id = r.run_id;
  in.finished_on = utc_now_rfc3339();
  for (const auto& t : r.timings) in.duration_ms += t.ms;
  in.backend = backend;
  in.runtime = r.policy.is_object() ? r.policy.value("runtime", "runc") : "";
  in.category = category_name(r.category);
  if (!r.tests_passed) in.reason = r.reason;
  return in;
}

std::string attestation_path(const RunStore& store, const std::string& run_id) {
  return store.dir() + "/" + kArtifactsDir + "/" + attestation_artifact_name(run_id);
}

Result<SignedVerdict> sign_verdict(const ProofRequest& req, const RunResult& r, const std::string& backend,
                                   const SigningKey& key, const RunStore& store) {
  const json statement = test_statement(statement_input(req, r, backend));
  auto envelope = dsse_sign(kInTotoPayloadType, statement.dump(-1, ' ', false, json::error_handler_t::replace), key);
  if (!envelope) return envelope.error();
  const std::string line = dsse_line(*envelope);
  if (auto st = store.write_text(kArtifactsDir, attestation_artifact_name(r.run_id), line, Durability::kRenameOnly); !st) {
    return st.error();
  }
  SignedVerdict v;
  v.attestation = {{"path", attestation_path(store, r.run_id)}, {"keyid", key.keyid()}, {"sha256", sha256_hex(line)}};
  v.envelope = line;
  return v;
}

}  // namespace lazyagent
