#include "util/base64.h"

#include <openssl/evp.h>

namespace lazyagent {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string in;
  in.reserve(text.size() + 3);
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') in += c;
  }
  if (in.size() % 4 == 1) return std::nullopt;  // no encoder ends a group with one character
  while (in.size() % 4 != 0) in += '=';
  std::size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  if (in.find('=') < in.size() - pad) return std::nullopt;  // padding only at the end
  std::string out(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);  // EVP_DecodeBlock counts the padding as zero bytes
  return out;
}

}  // namespace lazyagent
