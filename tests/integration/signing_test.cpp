// Signed verdicts (issue 42, docs/signing.md), end to end with the real CLI,
// the real podman service and the demo seed; checked by three verifiers that
// share no code: `lazyagent-oci verify --key`, `openssl pkeyutl -verify
// -rawin` over PAE bytes this file builds, and Python's cryptography with a
// PAE of its own. One fixture (two signed runs in one state directory: a pass
// with a `keygen` key, a failure with an `openssl genpkey` key) serves every
// check, so the file costs two sandbox runs.
#include "catch_compat.h"

#include <sys/stat.h>

#include <memory>

#include "harness.h"
#include "test_paths.h"
#include "util/base64.h"
#include "util/digest.h"

using it::CliResult;
using nlohmann::json;

namespace {

struct SignedRuns {
  it::TempDir dir;           // keys, patches, copies of envelopes
  it::TempDir state;         // the run store of both runs
  it::CliEnv env;
  std::string key, pub, keyid;           // keygen's
  std::string ossl_key, ossl_pub;        // openssl genpkey's
  std::string pass_patch, fail_patch;
  CliResult keygen, pass_cli, fail_cli;
  json pass, fail;
  std::string fail_events;               // the failing run's event stream
};

std::string envelope_pae(const json& envelope) {
  const std::string payload = *lazyagent::base64_decode(envelope["payload"].get<std::string>());
  const std::string type = envelope["payloadType"];
  return "DSSEv1 " + std::to_string(type.size()) + " " + type + " " + std::to_string(payload.size()) + " " + payload;
}

json envelope_of(const std::string& path) { return json::parse(it::read_file(path)); }

json statement_of(const json& envelope) {
  return json::parse(*lazyagent::base64_decode(envelope["payload"].get<std::string>()));
}

const SignedRuns& signed_runs() {
  static std::unique_ptr<SignedRuns> s;
  if (s) return *s;
  s = std::make_unique<SignedRuns>();
  s->env.state_dir = s->state.path();
  s->keygen = it::run_cli(s->env, {"keygen", "--out", s->dir.path() + "/keys", "--json"});
  const json k = it::json_out(s->keygen);
  s->key = k["private_key"];
  s->pub = k["public_key"];
  s->keyid = k["keyid"];
  s->ossl_key = s->dir.path() + "/ossl.pem";
  s->ossl_pub = s->dir.path() + "/ossl.pub";
  it::sh("umask 077 && openssl genpkey -algorithm ed25519 -out " + s->ossl_key + " && openssl pkey -in " +
         s->ossl_key + " -pubout -out " + s->ossl_pub);
  s->pass_patch = s->dir.file("fix.json", it::fixing_patch());
  s->fail_patch = s->dir.file("wrong.json", it::wrong_patch());
  // The failing run prints its environment and mounts first: were the key in
  // either, the canary hunt over its output would find it.
  s->pass_cli = it::run_cli(s->env, {"test", "--seed", it::seed_dir(), "--patch", s->pass_patch, "--sign-key", s->key,
                                     "--no-baseline", "--json"});
  s->pass = it::json_out(s->pass_cli);
  s->fail_cli = it::run_cli(s->env, {"test", "--seed", it::seed_dir(), "--patch", s->fail_patch, "--sign-key",
                                     s->ossl_key, "--no-baseline", "--events", "jsonl", "--test-command",
                                     "cat /proc/self/environ /proc/self/mountinfo; python3 -m unittest -v"});
  s->fail_events = s->fail_cli.err;  // --events jsonl: the stream is on stderr
  std::istringstream events(s->fail_events);
  for (std::string line; std::getline(events, line);) {
    json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == "result") s->fail = e["result"];
  }
  return *s;
}

CliResult verify(const SignedRuns& s, std::vector<std::string> args) {
  std::vector<std::string> all = {"verify", "--json"};
  all.insert(all.end(), args.begin(), args.end());
  return it::run_cli(s.env, all);
}

std::vector<std::string> parts_of(const json& verdict) {
  std::vector<std::string> parts;
  for (const auto& f : verdict["findings"]) parts.push_back(f["part"]);
  return parts;
}

}  // namespace

TEST_CASE("signing: a pass and a failure are signed, and verify, openssl and python's cryptography accept the envelopes",
          "[signing][quick]") {
  const SignedRuns& s = signed_runs();
  INFO("pass: " << s.pass_cli.err << "\nfail: " << s.fail_cli.err << s.fail_cli.out.substr(0, 2000));
  REQUIRE(s.pass_cli.exit_code == 0);
  REQUIRE(s.fail_cli.exit_code == 1);

  // keygen: the key id is the sha256 of the public key's DER, as openssl computes it.
  CHECK(s.keyid == it::sh("openssl pkey -pubin -in " + s.pub + " -outform DER | sha256sum | cut -c1-64").substr(0, 64));
  struct stat st {};
  REQUIRE(::stat(s.key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  const json& a = s.pass["attestation"];
  REQUIRE(a.is_object());
  CHECK(a["keyid"] == s.keyid);
  const std::string path = a["path"];
  CHECK(lazyagent::sha256_hex(it::read_file(path)) == a["sha256"]);
  CHECK(s.pass["timings"].contains("sign"));
  // `attestation RUN_ID` prints the stored envelope as it is.
  const CliResult shown = it::run_cli(s.env, {"attestation", s.pass["run_id"].get<std::string>()});
  CHECK(shown.exit_code == 0);
  CHECK(shown.out == it::read_file(path));

  const json env = envelope_of(path);
  CHECK(env["payloadType"] == "application/vnd.in-toto+json");
  REQUIRE(env["signatures"].size() == 1);
  CHECK(env["signatures"][0]["keyid"] == s.keyid);
  const json st_pass = statement_of(env);
  CHECK(st_pass["_type"] == "https://in-toto.io/Statement/v1");
  CHECK(st_pass["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1");
  CHECK(st_pass["predicate"]["result"] == "PASSED");
  CHECK(st_pass["predicate"]["run"]["id"] == s.pass["run_id"]);
  CHECK(st_pass["subject"][0]["digest"]["sha256"] == lazyagent::sha256_hex(it::fixing_patch()));
  CHECK(st_pass["subject"][1]["digest"]["sha256"] == s.pass["seed_sha256"]);
  CHECK(!st_pass["predicate"]["passedTests"].empty());

  // Our verifier, with the patch and the seed as subjects.
  const CliResult ok = verify(s, {"--key", s.pub, path, "--patch", s.pass_patch, "--seed", it::seed_dir()});
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(it::json_out(ok)["verified"] == true);
  CHECK(it::json_out(ok)["checked"] == json{{"patch", true}, {"seed", true}});

  // openssl alone, over the PAE bytes built here.
  it::TempDir o;
  const std::string pae = o.file("pae.bin", envelope_pae(env));
  const std::string sig = o.file("sig.bin", *lazyagent::base64_decode(env["signatures"][0]["sig"].get<std::string>()));
  CHECK(it::sh("openssl pkeyutl -verify -pubin -inkey " + s.pub + " -rawin -in " + pae + " -sigfile " + sig +
               " >/dev/null 2>&1 && echo ok || echo bad") == "ok\n");
  std::string changed = envelope_pae(env);
  changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 1);
  const std::string bad_pae = o.file("bad.bin", changed);
  CHECK(it::sh("openssl pkeyutl -verify -pubin -inkey " + s.pub + " -rawin -in " + bad_pae + " -sigfile " + sig +
               " >/dev/null 2>&1 && echo ok || echo bad") == "bad\n");

  // Python's cryptography (Debian's python3-cryptography), with its own PAE.
  const std::string py = o.file("check.py", R"(import base64, json, sys
from cryptography.hazmat.primitives.serialization import load_pem_public_key
env = json.loads(open(sys.argv[1]).read())
body = base64.b64decode(env["payload"]); t = env["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)
key = load_pem_public_key(open(sys.argv[2], "rb").read())
key.verify(base64.b64decode(env["signatures"][0]["sig"]), pae)
print(json.loads(body)["predicate"]["result"])
)");
  CHECK(it::sh("python3 " + py + " " + path + " " + s.pub + " 2>&1") == "PASSED\n");
  CHECK(it::sh("python3 " + py + " " + path + " " + s.ossl_pub + " >/dev/null 2>&1 && echo ok || echo bad") == "bad\n");

  // The failing patch is signed FAILED, with an openssl-made key, its tests named.
  REQUIRE(s.fail.is_object());
  const std::string fpath = s.fail["attestation"]["path"];
  const json fst = statement_of(envelope_of(fpath));
  CHECK(fst["predicate"]["result"] == "FAILED");
  CHECK(!fst["predicate"]["failedTests"].empty());
  CHECK(it::sh("python3 " + py + " " + fpath + " " + s.ossl_pub + " 2>&1") == "FAILED\n");
  CHECK(verify(s, {"--key", s.ossl_pub, fpath, "--patch", s.fail_patch}).exit_code == 0);
  const CliResult need_pass = verify(s, {"--key", s.ossl_pub, fpath, "--require-passed"});
  CHECK(need_pass.exit_code == 1);
  CHECK(parts_of(it::json_out(need_pass)) == std::vector<std::string>{"result"});
}

TEST_CASE("signing: a changed payload byte, another key and a swapped subject each fail verify, named",
          "[signing][quick]") {
  const SignedRuns& s = signed_runs();
  REQUIRE(s.pass["attestation"].is_object());
  const std::string path = s.pass["attestation"]["path"];
  json env = envelope_of(path);
  it::TempDir t;

  // A changed byte in the payload (PASSED -> FAILED would be one more): re-encoded, same signature.
  std::string payload = *lazyagent::base64_decode(env["payload"].get<std::string>());
  const auto at = payload.find("PASSED");
  REQUIRE(at != std::string::npos);
  payload.replace(at, 6, "PASSEd");
  json tampered = env;
  tampered["payload"] = lazyagent::base64_encode(payload);
  const CliResult r1 = verify(s, {"--key", s.pub, t.file("tampered.jsonl", tampered.dump() + "\n")});
  CHECK(r1.exit_code == 1);
  CHECK(parts_of(it::json_out(r1)) == std::vector<std::string>{"signature"});

  // Another key (the openssl one), though the envelope's keyid is left as it is.
  const CliResult r2 = verify(s, {"--key", s.ossl_pub, path});
  CHECK(r2.exit_code == 1);
  CHECK(parts_of(it::json_out(r2)) == std::vector<std::string>{"signature"});

  // The failing run's patch presented with the passing run's envelope; another seed.
  const CliResult r3 = verify(s, {"--key", s.pub, path, "--patch", s.fail_patch});
  CHECK(r3.exit_code == 1);
  CHECK(parts_of(it::json_out(r3)) == std::vector<std::string>{"subject:patch"});
  it::TempDir other_seed;
  other_seed.file("calculator.py", "def add(a, b):\n    return a + b\n");
  const CliResult r4 = verify(s, {"--key", s.pub, path, "--seed", other_seed.path()});
  CHECK(r4.exit_code == 1);
  CHECK(parts_of(it::json_out(r4)) == std::vector<std::string>{"subject:seed"});

  // Text mode names it too; a public key file that is not one is exit 2.
  const CliResult text = it::run_cli(s.env, {"verify", "--key", s.pub, path, "--patch", s.fail_patch});
  CHECK(text.out.find("NOT VERIFIED") != std::string::npos);
  CHECK(text.out.find("subject:patch: the patch given hashes to ") != std::string::npos);
  CHECK(verify(s, {"--key", s.key, path}).exit_code == 2);
  CHECK(verify(s, {"--patch", s.pass_patch, path}).exit_code == 2);
}

TEST_CASE("signing: the private key never reaches the run store, a result, the events or the sandbox (canary)",
          "[signing][security][quick]") {
  const SignedRuns& s = signed_runs();
  REQUIRE(s.fail.is_object());
  // The canaries: the private key's PEM body lines and its raw 32 bytes (hex and base64).
  const std::string pem = it::read_file(s.key) + it::read_file(s.ossl_key);
  std::vector<std::string> canaries;
  std::istringstream lines(pem);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("-----", 0) != 0 && !line.empty()) canaries.push_back(line);
  }
  for (const std::string& k : {s.key, s.ossl_key}) {
    const std::string der = it::sh("openssl pkey -in " + k + " -outform DER | base64 -w0");
    const std::string raw = lazyagent::base64_decode(der)->substr(16);  // PKCS#8 Ed25519: 16-byte prefix, 32-byte key
    REQUIRE(raw.size() == 32);
    std::string hex;
    for (unsigned char c : raw) {
      static const char* d = "0123456789abcdef";
      hex += d[c >> 4];
      hex += d[c & 15];
    }
    canaries.push_back(hex);
    canaries.push_back(lazyagent::base64_encode(raw));
  }
  for (const auto& c : canaries) REQUIRE(c.size() >= 32);

  const std::string haystack = it::read_tree(s.state.path()) + s.pass_cli.out + s.pass_cli.err + s.fail_cli.out +
                               s.fail_cli.err + s.fail.dump();
  // Positive control: the hunt finds a planted canary.
  for (const auto& c : canaries) CHECK((haystack + "planted " + c).find(c) != std::string::npos);
  for (const auto& c : canaries) CHECK(haystack.find(c) == std::string::npos);
  // The sandbox printed its environment and mounts (the failing run's output):
  // no key there, and no mount of the key's directory.
  const std::string out = s.fail["test_output"];
  CHECK(out.find("PATH=") != std::string::npos);  // positive control: the environment was printed
  CHECK(out.find(s.dir.path()) == std::string::npos);

  // A key inside the seed would be copied into the sandbox: refused before anything runs.
  it::TempDir seed;
  it::sh("cp -a " + it::seed_dir() + "/. " + seed.path() + " && cp " + s.key + " " + seed.path() + "/key.pem");
  const CliResult inside = it::run_cli(s.env, {"test", "--seed", seed.path(), "--patch", s.pass_patch, "--sign-key",
                                               seed.path() + "/key.pem", "--json"});
  CHECK(inside.exit_code == 2);
  CHECK(it::json_out(inside)["error"].get<std::string>().find("inside the seed") != std::string::npos);

  // A key others may read: refused, naming chmod 600; no run record is made.
  const std::string loose = s.dir.path() + "/loose.pem";
  it::sh("cp " + s.key + " " + loose + " && chmod 644 " + loose);
  const std::size_t runs_before = it::entries_in(s.state.path() + "/lazyagent-oci/runs");
  const CliResult refused = it::run_cli(s.env, {"test", "--seed", it::seed_dir(), "--patch", s.pass_patch,
                                                "--sign-key", loose, "--json"});
  CHECK(refused.exit_code == 2);
  CHECK(it::json_out(refused)["error"] == "test: --sign-key " + loose +
                                              ": the private key may be read by group or others (mode 0644): run `chmod 600 " +
                                              loose + "` and try again");
  CHECK(it::entries_in(s.state.path() + "/lazyagent-oci/runs") == runs_before);
}
