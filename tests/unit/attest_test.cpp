// Signed verdicts, the pure parts (src/attest/): DSSE's PAE against the
// specification's test vector, Ed25519 signatures that fail when a byte, the
// key or a subject changes, the in-toto statement's shape and checks, and the
// private key's permission checks with their exact messages.
#include "catch_compat.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "attest/dsse.h"
#include "attest/signing_key.h"
#include "attest/test_statement.h"
#include "config.h"
#include "unit_tmp.h"
#include "util/base64.h"

using namespace lazyagent;
using nlohmann::json;

namespace {

TestStatementInput sample_input() {
  TestStatementInput in;
  in.patch_sha256 = std::string(64, 'a');
  in.seed_sha256 = std::string(64, 'b');
  in.seed_read = {{"source", "directory"}, {"exclude", json::array()}, {"include_git", false}};
  in.image = "localhost/lazyagent-sandbox:latest";
  in.image_digest = "sha256:" + std::string(64, 'c');
  in.passed = true;
  in.policy_sha256 = std::string(64, 'd');
  in.seccomp_sha256 = std::string(64, 'e');
  in.test_command = "python3 -m unittest -v";
  in.passed_tests = {"test_calculator.CalculatorTest.test_add"};
  in.run_id = "r-1";
  in.finished_on = "2026-12-07T00:00:00Z";
  in.duration_ms = 420;
  in.backend = "podman";
  in.runtime = "runc";
  in.category = "passed";
  return in;
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), mode);
}

}  // namespace

TEST_CASE("attest: PAE is the DSSE specification's encoding (its test vector)", "[quick]") {
  CHECK(dsse_pae("http://example.com/HelloWorld", "hello world") ==
        "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  // Lengths are bytes, not characters; an empty body is "0 ".
  CHECK(dsse_pae("t", "\xc3\xa9") == "DSSEv1 1 t 2 \xc3\xa9");
  CHECK(dsse_pae("", "") == "DSSEv1 0  0 ");
}

TEST_CASE("attest: an envelope verifies under its key and under no other, and not after a changed byte", "[quick]") {
  auto key = SigningKey::generate();
  REQUIRE(key);
  auto other = SigningKey::generate();
  REQUIRE(other);
  auto pub = VerifyKey::from_pem(key->public_pem());
  auto other_pub = VerifyKey::from_pem(other->public_pem());
  REQUIRE(pub);
  REQUIRE(other_pub);
  CHECK(pub->keyid() == key->keyid());
  CHECK(key->keyid().size() == 64);
  CHECK(key->keyid() != other->keyid());

  const std::string payload = test_statement(sample_input()).dump();
  auto env = dsse_sign(kInTotoPayloadType, payload, *key);
  REQUIRE(env);
  const std::string line = dsse_line(*env);
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // one line
  auto parsed = dsse_parse(line);
  REQUIRE(parsed);
  CHECK(parsed->payload == payload);
  CHECK(parsed->signatures.at(0).keyid == key->keyid());
  CHECK(dsse_verify(*parsed, *pub));  // positive control
  CHECK_FALSE(dsse_verify(*parsed, *other_pub));

  // Every single changed byte of the payload breaks the signature (a sample of positions).
  for (std::size_t i = 0; i < payload.size(); i += 37) {
    DsseEnvelope changed = *parsed;
    changed.payload[i] = static_cast<char>(changed.payload[i] ^ 0x01);
    CHECK_FALSE(dsse_verify(changed, *pub));
  }
  // So does a changed payloadType (PAE covers it) and a changed signature byte.
  DsseEnvelope retyped = *parsed;
  retyped.payload_type = "application/json";
  CHECK_FALSE(dsse_verify(retyped, *pub));
  DsseEnvelope bad_sig = *parsed;
  bad_sig.signatures[0].sig[10] = static_cast<char>(bad_sig.signatures[0].sig[10] ^ 0x80);
  CHECK_FALSE(dsse_verify(bad_sig, *pub));
  // The keyid is a hint: the right keyid on another key's signature does not help.
  auto forged = dsse_sign(kInTotoPayloadType, payload, *other);
  REQUIRE(forged);
  forged->signatures[0].keyid = key->keyid();
  CHECK_FALSE(dsse_verify(*forged, *pub));
}

TEST_CASE("attest: envelope parsing names every problem", "[quick]") {
  CHECK(dsse_parse("not json").error().message ==
        "not a DSSE envelope: expected one JSON object {payloadType, payload, signatures}");
  CHECK(dsse_parse(R"({"payload":"!!","signatures":[]})").error().message ==
        "not a DSSE envelope: payloadType: missing or not a string; payload: not base64; signatures: missing, not a "
        "list, or empty");
  CHECK(dsse_parse(R"({"payloadType":"t","payload":"","signatures":[{"keyid":"k"}]})").error().message ==
        "not a DSSE envelope: signatures[0].sig: missing or not a string");
}

TEST_CASE("attest: the statement is an in-toto test-result Statement v1 with the run's subjects", "[quick]") {
  TestStatementInput in = sample_input();
  in.seed_git_commit = std::string(40, 'f');
  in.environment_image = "localhost/lazyagent-env:abc";
  in.environment_digest = "sha256:" + std::string(64, '1');
  const json st = test_statement(in);
  CHECK(st["_type"] == "https://in-toto.io/Statement/v1");
  CHECK(st["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1");
  CHECK(st["subject"][0] == json{{"name", "patch"}, {"digest", {{"sha256", in.patch_sha256}}}});
  CHECK(st["subject"][1]["digest"] == json{{"sha256", in.seed_sha256}, {"gitCommit", in.seed_git_commit}});
  CHECK(st["subject"][2] == json{{"name", in.image}, {"digest", {{"sha256", std::string(64, 'c')}}}});
  const json& p = st["predicate"];
  CHECK(p["result"] == "PASSED");
  CHECK(p["configuration"][0]["digest"]["sha256"] == in.policy_sha256);
  CHECK(p["configuration"][1] == json{{"name", "oci/seccomp.json"}, {"digest", {{"sha256", in.seccomp_sha256}}}});
  CHECK(p["configuration"][2]["annotations"]["command"] == in.test_command);
  CHECK(p["configuration"][3]["name"] == in.environment_image);
  CHECK(p["passedTests"] == json::array({"test_calculator.CalculatorTest.test_add"}));
  CHECK(p["failedTests"] == json::array());
  CHECK(p["run"]["id"] == "r-1");
  in.passed = false;
  CHECK(test_statement(in)["predicate"]["result"] == "FAILED");

  CHECK(check_test_statement(st, {in.patch_sha256, in.seed_sha256}).empty());  // positive control
  // Another patch, another seed: each named.
  auto f = check_test_statement(st, {std::string(64, '0'), std::string(64, '9')});
  REQUIRE(f.size() == 2);
  CHECK(f[0].part == "subject:patch");
  CHECK(f[0].detail == "the patch given hashes to " + std::string(64, '0') + ", the statement's subject \"patch\" is " +
                           in.patch_sha256);
  CHECK(f[1].part == "subject:seed");
  // Swapped subjects (the patch's digest under "seed" and the other way round) fail both.
  json swapped = st;
  std::swap(swapped["subject"][0]["digest"], swapped["subject"][1]["digest"]);
  CHECK(check_test_statement(swapped, {in.patch_sha256, in.seed_sha256}).size() == 2);
  // Wrong types.
  json retyped = st;
  retyped["_type"] = "https://in-toto.io/Statement/v0.1";
  retyped["predicateType"] = "https://slsa.dev/provenance/v1";
  auto t = check_test_statement(retyped, {});
  REQUIRE(t.size() == 2);
  CHECK(t[0].part == "type");
  CHECK(t[1].part == "predicateType");
}

TEST_CASE("attest: a private key others may read, or not the user's own, is refused naming chmod 600", "[quick]") {
  Tmp tmp;
  auto key = SigningKey::generate();
  REQUIRE(key);
  const std::string path = tmp.path + "/key.pem";
  REQUIRE(key->write_private_pem(path));
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto loaded = SigningKey::load(path, "--sign-key");  // positive control
  REQUIRE(loaded);
  CHECK(loaded->keyid() == key->keyid());
  // Never overwritten.
  CHECK(key->write_private_pem(path).error().message.find("never overwritten") != std::string::npos);

  ::chmod(path.c_str(), 0640);
  auto group = SigningKey::load(path, "--sign-key");
  REQUIRE_FALSE(group);
  CHECK(group.error().kind == ErrorKind::kUsage);
  CHECK(group.error().message == "--sign-key " + path + ": the private key may be read by group or others (mode 0640): run `chmod 600 " + path + "` and try again");
  ::chmod(path.c_str(), 0604);
  CHECK_FALSE(SigningKey::load(path, "--sign-key"));
  ::chmod(path.c_str(), 0600);

  if (::geteuid() == 0) {
    // Another user's key (root can make one here): refused even at mode 0600.
    REQUIRE(::chown(path.c_str(), 1234, 1234) == 0);
    auto foreign = SigningKey::load(path, "signing.key");
    REQUIRE_FALSE(foreign);
    CHECK(foreign.error().message == "signing.key " + path + ": the private key belongs to uid 1234, not to you (uid 0): use a key file of your own, readable by you only (`chmod 600 " + path + "`)");
  }

  // Not a key; a public key given as the private one; an RSA key.
  write_file(tmp.path + "/junk.pem", "hello\n", 0600);
  CHECK(SigningKey::load(tmp.path + "/junk.pem", "--sign-key").error().message.find("not a PEM private key") !=
        std::string::npos);
  write_file(tmp.path + "/pub.pem", key->public_pem(), 0600);
  CHECK_FALSE(SigningKey::load(tmp.path + "/pub.pem", "--sign-key"));
  CHECK(VerifyKey::from_pem("-----BEGIN PRIVATE KEY-----\n").error().message.find("a private key, not a public one") == 0);
  CHECK(SigningKey::load(tmp.path + "/missing.pem", "--sign-key").error().message.find("cannot open") != std::string::npos);
}

TEST_CASE("attest: signing a verdict costs well under 5 ms (statement, envelope, signature)", "[quick]") {
  auto key = SigningKey::generate();
  REQUIRE(key);
  TestStatementInput in = sample_input();
  for (int i = 0; i < 200; ++i) in.passed_tests.push_back("test_module.Case.test_" + std::to_string(i));
  std::vector<double> us;
  for (int i = 0; i < 101; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto env = dsse_sign(kInTotoPayloadType, test_statement(in).dump(), *key);
    const std::string line = dsse_line(*env);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    REQUIRE(!line.empty());
  }
  std::sort(us.begin(), us.end());
  const double median = us[us.size() / 2];
  WARN("sign a 200-test statement: median " << median << " us, max " << us.back() << " us");
  CHECK(median < 5000);
}

TEST_CASE("attest: signing.key in the config is resolved against the config's directory, unknown keys named", "[quick]") {
  auto c = parse_config("signing:\n  key: keys/ci.pem\n", "c.yaml", "/etc/lazyagent");
  REQUIRE(c);
  CHECK(c->signing.key == "/etc/lazyagent/keys/ci.pem");
  CHECK(parse_config("", "c.yaml", "/x")->signing.key.empty());  // unset: nothing is signed
  auto bad = parse_config("signing:\n  keyfile: k.pem\n", "c.yaml", "/x");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("c.yaml: signing.keyfile") == 0);
}
