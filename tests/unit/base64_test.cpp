// The one base64 codec (OpenSSL's, base64.h): RFC 4648's vectors, every byte,
// and what the decoder tolerates (line breaks, missing padding) or refuses.
#include "catch_compat.h"

#include "util/base64.h"

using namespace lazyagent;

TEST_CASE("base64: RFC 4648 test vectors both ways") {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == plain);
  }
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  CHECK(base64_decode(base64_encode(all)) == all);
}

TEST_CASE("base64: line breaks and missing padding are read, anything else outside the alphabet is refused") {
  CHECK(base64_decode("Zm9v\nYmFy\r\n") == std::string("foobar"));
  CHECK(base64_decode("Zm9vYg") == std::string("foob"));
  CHECK(base64_decode("aHR0cDovL2hvc3Q=") == std::string("http://host"));
  CHECK_FALSE(base64_decode("Zm9v*mFy").has_value());
  CHECK_FALSE(base64_decode("Zm9vY").has_value());      // one character left over
  CHECK_FALSE(base64_decode("Zm=9vYmFy").has_value());  // padding in the middle
}
