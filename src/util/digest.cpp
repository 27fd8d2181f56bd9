#include "util/digest.h"

#include <openssl/evp.h>

namespace lazyagent {

namespace {

std::string to_hex(const unsigned char* md, unsigned int len) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 0xf]);
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  return to_hex(md, len);
}

struct Sha256::State {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~State() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : s_(std::make_unique<State>()) { EVP_DigestInit_ex(s_->ctx, EVP_sha256(), nullptr); }
Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) { EVP_DigestUpdate(s_->ctx, bytes.data(), bytes.size()); }

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(s_->ctx, md, &len);
  return to_hex(md, len);
}

std::string image_hash_text(std::string_view hash) {
  if (hash.empty()) return "";
  return (hash.find(':') == std::string_view::npos ? "id " : "digest ") + short_digest(hash);
}

std::string short_digest(std::string_view digest) {
  const std::size_t colon = digest.find(':');
  const std::string_view algo = colon == std::string_view::npos ? std::string_view() : digest.substr(0, colon + 1);
  const std::string_view hex = colon == std::string_view::npos ? digest : digest.substr(colon + 1);
  return std::string(algo) + std::string(hex.substr(0, 12));
}

}  // namespace lazyagent
