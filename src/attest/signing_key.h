// Ed25519 keys for signed verdicts (dsse.h, test_statement.h), through
// OpenSSL's EVP API, the library the project links already (sha256, base64).
//
// Files: the private key is PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), as
// `openssl genpkey -algorithm ed25519` writes it; the public key is SPKI PEM
// ("-----BEGIN PUBLIC KEY-----"), as `openssl pkey -pubout` writes it. The key
// id is the lower-case hex sha256 of the public key's DER (SPKI) bytes:
//   openssl pkey -pubin -in key.pub -outform DER | sha256sum
// It is a hint for finding a key, never a reason to accept a signature.
//
// The private key's contract: it is read once, on the host, by the process
// that signs; a file group or others may read, or that another user owns, is
// refused (naming `chmod 600`); its bytes are wiped from the read buffer after
// parsing and live only inside OpenSSL's EVP_PKEY. No function here returns
// or prints them: the key never reaches a container, a log, a result, the run
// store or an event stream (the canary test, tests/integration/signing_test.cpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace lazyagent {

struct PkeyFree {
  void operator()(EVP_PKEY* k) const;
};
using PkeyPtr = std::shared_ptr<EVP_PKEY>;

// The largest key file read (an Ed25519 PEM is about 120 bytes).
inline constexpr std::size_t kMaxKeyFileBytes = 16 * 1024;

// A private key that signs. Copies share one EVP_PKEY.
class SigningKey {
 public:
  // Reads and checks `path` (a regular file of this user, mode without group
  // or other bits, an unencrypted Ed25519 PKCS#8 PEM). Errors are kUsage and
  // say what to do. `what` names the option in messages ("--sign-key").
  static Result<SigningKey> load(const std::string& path, const std::string& what);
  // A fresh key (keygen, tests).
  static Result<SigningKey> generate();

  const std::string& keyid() const { return keyid_; }
  // The SPKI PEM of the public half.
  std::string public_pem() const;
  // The 64-byte Ed25519 signature of `message` (pure Ed25519, no prehash).
  Result<std::string> sign(std::string_view message) const;
  // Writes the private key (PKCS#8 PEM) to `path`, created with mode 0600;
  // an existing file is never overwritten.
  Status write_private_pem(const std::string& path) const;

 private:
  PkeyPtr key_;
  std::string keyid_;
};

// A public key that verifies.
class VerifyKey {
 public:
  // An SPKI PEM ("-----BEGIN PUBLIC KEY-----") of an Ed25519 key.
  static Result<VerifyKey> from_pem(std::string_view pem);
  static Result<VerifyKey> load(const std::string& path);
  const std::string& keyid() const { return keyid_; }
  // True only for a valid Ed25519 signature of `message` by this key.
  bool verify(std::string_view message, std::string_view signature) const;

 private:
  PkeyPtr key_;
  std::string keyid_;
};

}  // namespace lazyagent
