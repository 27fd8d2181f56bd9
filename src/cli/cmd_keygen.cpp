// `lazyagent-oci keygen --out DIR [--json]`: an Ed25519 key pair for signed
// verdicts (docs/signing.md): DIR/key.pem (PKCS#8 PEM, mode 0600) and
// DIR/key.pub (SPKI PEM), and the key id (sha256 of the public key's DER).
// DIR is made (0700) when missing; an existing key is never overwritten.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "attest/signing_key.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "util/atomic_file.h"

namespace lazyagent {

int cmd_keygen(const std::vector<std::string>& args) {
  std::string out;
  bool as_json = false;
  ArgParser p("keygen", "--out DIR [--json]",
              "Makes an Ed25519 key pair for signed verdicts: DIR/key.pem, the private key (PKCS#8 PEM,\n"
              "mode 0600: keep it to yourself) and DIR/key.pub, the public key (SPKI PEM) you give to\n"
              "reviewers. Prints the key id, the sha256 of the public key's DER bytes. A key made by\n"
              "`openssl genpkey -algorithm ed25519` works the same. An existing key.pem is never overwritten.");
  p.option("--out", &out, "DIR", "the directory to write key.pem and key.pub into (made if missing)");
  p.flag("--json", &as_json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (out.empty()) return report_error(usage_error("keygen: --out DIR is required"), as_json);

  if (::mkdir(out.c_str(), 0700) != 0 && errno != EEXIST) {
    return report_error(usage_error("keygen: --out " + out + ": " + std::strerror(errno)), as_json);
  }
  const std::string priv = out + "/key.pem", pub = out + "/key.pub";
  auto key = SigningKey::generate();
  if (!key) return report_error(key.error(), as_json);
  if (auto st = key->write_private_pem(priv); !st) return report_error(st.error().context("keygen"), as_json);
  if (auto st = write_file_atomic(pub, key->public_pem()); !st) return report_error(st.error().context("keygen"), as_json);
  ::chmod(pub.c_str(), 0644);
  if (as_json) {
    std::cout << nlohmann::json{{"keyid", key->keyid()}, {"private_key", priv}, {"public_key", pub}}.dump(2) << std::endl;
  } else {
    std::cout << "key id:      " << key->keyid() << "\n"
              << "private key: " << priv << " (mode 0600: keep it to yourself; --sign-key or signing.key)\n"
              << "public key:  " << pub << " (give it to whoever checks your verdicts: verify --key)\n";
  }
  return kExitPassed;
}

}  // namespace lazyagent
