// Content hashes for provenance (patch, seed snapshot, policy).
#pragma once

#include <string>
#include <string_view>

namespace lazyagent {

// Lower-case hex sha256 of the bytes.
std::string sha256_hex(std::string_view bytes);

}  // namespace lazyagent
