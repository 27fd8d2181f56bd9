#include "attest/test_statement.h"

#include "util/digest.h"

namespace lazyagent {

using nlohmann::json;

std::string digest_hex(const std::string& digest) {
  const auto colon = digest.find(':');
  return colon == std::string::npos ? digest : digest.substr(colon + 1);
}

namespace {

json sha256_descriptor(const std::string& name, const std::string& sha256) {
  return json{{"name", name}, {"digest", {{"sha256", sha256}}}};
}

}  // namespace

json test_statement(const TestStatementInput& in) {
  json seed = sha256_descriptor(kSeedSubject, in.seed_sha256);
  if (!in.seed_git_commit.empty()) seed["digest"]["gitCommit"] = in.seed_git_commit;
  if (in.seed_read.is_object()) seed["annotations"] = in.seed_read;
  json subjects = json::array({sha256_descriptor(kPatchSubject, in.patch_sha256), seed});
  if (!in.image_digest.empty()) subjects.push_back(sha256_descriptor(in.image, digest_hex(in.image_digest)));

  json configuration = json::array();
  json policy = sha256_descriptor("policy", in.policy_sha256);
  policy["mediaType"] = "application/json";
  configuration.push_back(policy);
  if (!in.seccomp_sha256.empty()) configuration.push_back(sha256_descriptor("oci/seccomp.json", in.seccomp_sha256));
  json command = sha256_descriptor("test-command", sha256_hex(in.test_command));
  command["annotations"] = {{"command", in.test_command}};
  configuration.push_back(command);
  if (!in.environment_image.empty()) {
    json env = sha256_descriptor(in.environment_image, digest_hex(in.environment_digest));
    env["annotations"] = {{"role", "environment"}};
    configuration.push_back(env);
  }

  json run = {{"id", in.run_id},           {"finishedOn", in.finished_on}, {"durationMs", in.duration_ms},
              {"backend", in.backend},     {"runtime", in.runtime},        {"category", in.category}};
  if (!in.reason.empty()) run["reason"] = in.reason;
  return json{{"_type", kStatementType},
              {"subject", subjects},
              {"predicateType", kTestResultPredicateType},
              {"predicate",
               {{"result", in.passed ? "PASSED" : "FAILED"},
                {"configuration", configuration},
                {"passedTests", in.passed_tests},
                {"failedTests", in.failed_tests},
                {"run", run}}}};
}

std::string subject_sha256(const json& statement, const std::string& name) {
  if (!statement.is_object() || !statement.contains("subject") || !statement["subject"].is_array()) return "";
  for (const auto& s : statement["subject"]) {
    if (!s.is_object() || s.value("name", json()) != json(name)) continue;
    const json d = s.value("digest", json());
    if (d.is_object() && d.contains("sha256") && d["sha256"].is_string()) return d["sha256"].get<std::string>();
  }
  return "";
}

std::vector<StatementFinding> check_test_statement(const json& st, const StatementExpectation& expect) {
  std::vector<StatementFinding> out;
  if (!st.is_object()) {
    out.push_back({"statement", "the payload is not a JSON object"});
    return out;
  }
  const json type = st.value("_type", json());
  if (type != json(kStatementType)) {
    out.push_back({"type", "_type is " + type.dump() + ", expected \"" + kStatementType + "\""});
  }
  const json ptype = st.value("predicateType", json());
  if (ptype != json(kTestResultPredicateType)) {
    out.push_back({"predicateType", "predicateType is " + ptype.dump() + ", expected \"" + kTestResultPredicateType + "\""});
  }
  const json pred = st.value("predicate", json());
  const json result = pred.is_object() ? pred.value("result", json()) : json();
  if (result != json("PASSED") && result != json("FAILED")) {
    out.push_back({"predicate", "predicate.result is " + result.dump() + ", expected \"PASSED\" or \"FAILED\""});
  }
  if (!st.contains("subject") || !st["subject"].is_array() || st["subject"].empty()) {
    out.push_back({"statement", "subject: missing, not a list, or empty"});
  }
  auto expect_subject = [&](const char* name, const std::string& want, const char* what) {
    if (want.empty()) return;
    const std::string got = subject_sha256(st, name);
    if (got.empty()) {
      out.push_back({std::string("subject:") + name, std::string("the statement has no subject \"") + name + "\""});
    } else if (got != want) {
      out.push_back({std::string("subject:") + name, std::string("the ") + what + " hashes to " + want +
                                                         ", the statement's subject \"" + name + "\" is " + got});
    }
  };
  expect_subject(kPatchSubject, expect.patch_sha256, "patch given");
  expect_subject(kSeedSubject, expect.seed_sha256, "seed given");
  return out;
}

}  // namespace lazyagent
