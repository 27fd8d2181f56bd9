#include "catch_compat.h"

#include "util/digest.h"

using namespace lazyagent;

TEST_CASE("short_digest keeps 12 hex digits after the algorithm (env build printed `sha256:abcde`)") {
  CHECK(short_digest("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") ==
        "sha256:0123456789ab");
  CHECK(short_digest("0123456789abcdef0123") == "0123456789ab");
  CHECK(short_digest("sha256:abc") == "sha256:abc");
  CHECK(short_digest("") == "");
}

TEST_CASE("image_hash_text labels a digest and an id, 12 hex digits each (issue 43: unlabelled hashes of 12, 19 and 64 digits)") {
  CHECK(image_hash_text("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") ==
        "digest sha256:0123456789ab");
  CHECK(image_hash_text("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") == "id 0123456789ab");
  CHECK(image_hash_text("") == "");
}
