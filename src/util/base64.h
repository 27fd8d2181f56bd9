// Base64 (RFC 4648, the standard alphabet with padding) through OpenSSL,
// which the project links already (sha256): one codec for the kubeconfig's
// certificate data, a ConfigMap's binaryData and a Secret's data.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lazyagent {

std::string base64_encode(std::string_view bytes);

// Line breaks and spaces are skipped and missing padding is tolerated (as
// kubeconfig writers produce); any other character outside the alphabet, or
// a length no encoder produces, gives nullopt.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace lazyagent
