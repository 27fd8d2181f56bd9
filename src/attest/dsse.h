// DSSE envelopes (the Dead Simple Signing Envelope, as the in-toto
// attestation framework and sigstore use it), one JSON object per line:
//   {"payloadType":"application/vnd.in-toto+json","payload":"<base64>",
//    "signatures":[{"keyid":"<hex>","sig":"<base64>"}]}
// The signature is Ed25519 over PAE(payloadType, payload), the payload's raw
// bytes (not its base64), exactly as the specification defines it:
//   "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
// LEN is the byte length in ASCII decimal. Verifying needs nothing but
// openssl: write the PAE bytes to a file, then
//   openssl pkeyutl -verify -pubin -inkey key.pub -rawin -in pae.bin -sigfile sig.bin
// A signature's keyid is a hint: an envelope is accepted only when a
// signature verifies under the key the verifier chose.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attest/signing_key.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kInTotoPayloadType = "application/vnd.in-toto+json";
// An envelope line is read up to this size (a statement with 100,000 test
// names fits).
inline constexpr std::size_t kMaxEnvelopeBytes = 64 << 20;

// The pre-authentication encoding the signature covers.
std::string dsse_pae(std::string_view payload_type, std::string_view payload);

struct DsseSignature {
  std::string keyid;
  std::string sig;  // raw signature bytes
};

struct DsseEnvelope {
  std::string payload_type;
  std::string payload;  // raw bytes
  std::vector<DsseSignature> signatures;
};

// Signs `payload` with `key`: one signature, the key's id as keyid.
Result<DsseEnvelope> dsse_sign(std::string_view payload_type, std::string payload, const SigningKey& key);

// The envelope as one JSON line, with its final "\n".
std::string dsse_line(const DsseEnvelope& e);

// The envelope in `text` (one JSON object; surrounding whitespace allowed).
// Every problem is named: not JSON, a missing or mistyped field, bad base64,
// no signature. kUsage.
Result<DsseEnvelope> dsse_parse(std::string_view text);

// True when some signature of `e` verifies under `key` (keyids are not consulted).
bool dsse_verify(const DsseEnvelope& e, const VerifyKey& key);

}  // namespace lazyagent
