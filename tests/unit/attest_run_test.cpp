// The pipeline's sign step (src/pipeline/attest_run.h) on a result shaped as
// prove_judged makes it: what the statement names, which results are signed,
// the envelope file in the run store, and what the whole step costs
// (statement, signature, the file written) against issue 42's 5 ms.
#include "catch_compat.h"

#include <algorithm>
#include <chrono>

#include "attest/dsse.h"
#include "pipeline/attest_run.h"
#include "pipeline/sandbox_run.h"
#include "store/provenance.h"
#include "unit_tmp.h"
#include "util/digest.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

RunResult judged(bool passed) {
  RunResult r;
  r.run_id = "r-20261207-000000-abcdef";
  r.status = passed ? RunStatus::kPassed : RunStatus::kFailed;
  r.tests_passed = passed;
  r.reason = passed ? "" : "1 test failed";
  r.category = passed ? Category::kPassed : Category::kFailed;
  r.image = "localhost/lazyagent-sandbox:latest";
  r.image_digest = "sha256:" + std::string(64, 'c');
  r.seed_sha256 = std::string(64, 'b');
  r.seed_source = {{"kind", "directory"}};
  r.policy = {{"runtime", "runc"}, {"seccomp", {{"sha256", std::string(64, 'e')}}}};
  r.timings = {{"create", 100}, {"run", 300}};
  r.tests.format = "unittest";
  r.tests.cases = {{"test_calc.T.test_add", passed ? TestOutcome::kPassed : TestOutcome::kFailed},
                   {"test_calc.T.test_sub", TestOutcome::kPassed},
                   {"test_calc.T.test_skip", TestOutcome::kSkipped}};
  return r;
}

}  // namespace

TEST_CASE("sign step: the statement names the patch's bytes as given, the seed, the image, the tests", "[quick]") {
  ProofRequest req;
  req.patch_json = "{\"files\":[{\"path\":\"calculator.py\",\"content\":\"x\"}]}\n";
  req.config.test_command = "python3 -m unittest -v";
  const RunResult r = judged(false);
  const json st = test_statement(statement_input(req, r, "podman"));
  CHECK(subject_sha256(st, "patch") == sha256_hex(req.patch_json));
  CHECK(subject_sha256(st, "seed") == r.seed_sha256);
  CHECK(subject_sha256(st, r.image) == std::string(64, 'c'));
  CHECK(st["predicate"]["result"] == "FAILED");
  CHECK(st["predicate"]["failedTests"] == json{"test_calc.T.test_add"});
  CHECK(st["predicate"]["passedTests"] == json{"test_calc.T.test_sub"});
  CHECK(st["predicate"]["configuration"][0]["digest"]["sha256"] == canonical_sha256(r.policy));
  CHECK(st["predicate"]["run"]["durationMs"] == 400);
  CHECK(st["predicate"]["run"]["reason"] == "1 test failed");

  // Only verdicts are signed: not a refusal, an error, or a baseline.
  CHECK(is_signed_verdict(judged(true)));
  CHECK(is_signed_verdict(judged(false)));
  RunResult refused = judged(false);
  refused.status = RunStatus::kRefused;
  CHECK_FALSE(is_signed_verdict(refused));
  RunResult base = judged(true);
  base.baseline = true;
  CHECK_FALSE(is_signed_verdict(base));
}

TEST_CASE("sign step: the envelope is written to the run store and verifies, the whole step well under 5 ms",
          "[quick]") {
  Tmp tmp;
  const RunStore store(tmp.path);
  REQUIRE(store.ensure());
  auto key = SigningKey::generate();
  REQUIRE(key);
  auto pub = VerifyKey::from_pem(key->public_pem());
  REQUIRE(pub);
  ProofRequest req;
  req.patch_json = "--- a/calculator.py\n+++ b/calculator.py\n";
  RunResult r = judged(true);
  for (int i = 0; i < 200; ++i) r.tests.cases.push_back({"test_m.C.test_" + std::to_string(i), TestOutcome::kPassed});

  std::vector<double> us;
  SignedVerdict last;
  for (int i = 0; i < 51; ++i) {
    // A new file each time, as each run's is (a rename over an existing file
    // makes ext4 flush its data first: auto_da_alloc).
    r.run_id = "r-20261207-000000-" + std::to_string(100000 + i);
    const auto t0 = std::chrono::steady_clock::now();
    auto v = sign_verdict(req, r, "podman", *key, store);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    REQUIRE(v);
    last = *v;
  }
  const std::string file = *store.read_text(kArtifactsDir, attestation_artifact_name(r.run_id));
  CHECK(file == last.envelope);
  CHECK(last.attestation["path"] == attestation_path(store, r.run_id));
  CHECK(last.attestation["sha256"] == sha256_hex(file));
  CHECK(last.attestation["keyid"] == key->keyid());
  auto env = dsse_parse(file);
  REQUIRE(env);
  CHECK(dsse_verify(*env, *pub));
  std::sort(us.begin(), us.end());
  WARN("the sign step (statement with 202 tests, Ed25519, envelope file): median " << us[us.size() / 2]
                                                                                  << " us, max " << us.back() << " us");
  CHECK(us[us.size() / 2] < 5000);
}
