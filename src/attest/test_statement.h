// The in-toto Statement a signed verdict carries (in-toto attestation
// framework v1, predicate "test-result" v0.1), and the checks an offline
// verifier makes of it. Pure: values in, JSON or findings out.
//
//   _type          https://in-toto.io/Statement/v1
//   subject        what was tested, each {name, digest}:
//     "patch"      sha256 of the patch's bytes as given (the file of
//                  `test --patch`, the planner's reply for `run`)
//     "seed"       sha256: the seed's tree digest (seed_snapshot.h: per entry,
//                  in path order, "<kind> <mode> <path>\0<sha256 of content>\n",
//                  kind d|f|l, hashed with sha256); gitCommit: HEAD for a git
//                  seed; annotations: how it was read (source, exclude, include_git)
//     <image>      the sandbox image's reference, sha256: its image id
//   predicateType  https://in-toto.io/attestation/test-result/v0.1
//   predicate
//     result       PASSED | FAILED (the judged verdict: a flaky pass is PASSED)
//     configuration  ResourceDescriptors: "policy" (sha256 of the effective
//                  policy's canonical JSON, kept in the run record), the
//                  seccomp profile, "test-command" (sha256 of the command,
//                  the command in annotations), the environment image if any
//     passedTests, failedTests   the runner's per-test names
//     run          the extension this harness adds (the predicate allows it):
//                  id, finishedOn (RFC 3339 UTC), durationMs (the timed steps'
//                  sum), backend, runtime, category, reason
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazyagent {

inline constexpr const char* kStatementType = "https://in-toto.io/Statement/v1";
inline constexpr const char* kTestResultPredicateType = "https://in-toto.io/attestation/test-result/v0.1";
inline constexpr const char* kPatchSubject = "patch";
inline constexpr const char* kSeedSubject = "seed";

struct TestStatementInput {
  std::string patch_sha256;
  std::string seed_sha256;
  std::string seed_git_commit;     // "" when the seed is no git work tree
  nlohmann::json seed_read;        // {source, exclude, include_git}
  std::string image;               // the sandbox image's reference
  std::string image_digest;        // "sha256:<hex>"
  bool passed = false;
  std::string policy_sha256;
  std::string seccomp_sha256;
  std::string test_command;
  std::string environment_image;   // "" without an environment
  std::string environment_digest;
  std::vector<std::string> passed_tests;
  std::vector<std::string> failed_tests;
  std::string run_id;
  std::string finished_on;         // RFC 3339 UTC
  long duration_ms = 0;
  std::string backend;
  std::string runtime;
  std::string category;
  std::string reason;
};

nlohmann::json test_statement(const TestStatementInput& in);

// "sha256:abc" -> "abc"; a bare hex id stays as it is.
std::string digest_hex(const std::string& digest);

// What an offline verifier compares the statement with ("" = not given).
struct StatementExpectation {
  std::string patch_sha256;
  std::string seed_sha256;
};

struct StatementFinding {
  std::string part;    // "type", "predicateType", "subject:patch", "subject:seed", "statement"
  std::string detail;
};

// Every way the statement is not a test-result Statement v1 or does not name
// the expected subjects; empty = it holds.
std::vector<StatementFinding> check_test_statement(const nlohmann::json& statement, const StatementExpectation& expect);

// The statement's subject `name`'s sha256 ("" when absent).
std::string subject_sha256(const nlohmann::json& statement, const std::string& name);

}  // namespace lazyagent
