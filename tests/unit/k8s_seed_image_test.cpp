// The seed image's blobs (src/engine/k8s/k8s_seed_image.h), built in memory:
// reproducible, content-addressed, the layout the init container copies.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include "engine/k8s/k8s_seed_image.h"
#include "util/digest.h"

using nlohmann::json;
using namespace lazyagent;

namespace {

// The names in a ustar archive, in order.
std::vector<std::string> tar_names(const std::string& tar) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at + 512 <= tar.size();) {
    const std::string name(tar.c_str() + at);
    if (name.empty()) break;
    const std::string prefix(tar.c_str() + at + 345);
    out.push_back(prefix.empty() ? name : prefix + "/" + name);
    const std::size_t size = std::stoull(std::string(tar.c_str() + at + 124, 11), nullptr, 8);
    at += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

}  // namespace

TEST_CASE("seed image: two layers (the copier, the seed under seed/), digests that name the bytes, the same "
          "image for the same copy") {
  const std::vector<K8sFile> files = {{"a.py", "print(1)\n", 0644}, {"pkg/sub/b.sh", "#!/bin/sh\n", 0755}};
  auto b = build_seed_image(files, {"empty"}, {{"io.lazyagent.run", "r-1"}});
  REQUIRE(b.ok());
  CHECK(tar_names(b->copier_layer) == std::vector<std::string>{"bin/", "bin/busybox"});
  CHECK(tar_names(b->seed_layer) == std::vector<std::string>{"seed/", "seed/empty/", "seed/pkg/", "seed/pkg/sub/",
                                                             "seed/a.py", "seed/pkg/sub/b.sh"});
  const json m = json::parse(b->manifest);
  CHECK(m["mediaType"] == kOciManifestType);
  CHECK(m["layers"][0]["digest"] == "sha256:" + sha256_hex(b->copier_layer));
  CHECK(m["layers"][1]["digest"] == "sha256:" + sha256_hex(b->seed_layer));
  CHECK(m["layers"][1]["size"] == b->seed_layer.size());
  CHECK(m["config"]["digest"] == "sha256:" + sha256_hex(b->config));
  CHECK(m["annotations"]["io.lazyagent.run"] == "r-1");
  CHECK(b->image.digest == "sha256:" + sha256_hex(b->manifest));
  CHECK(json::parse(b->config)["rootfs"]["diff_ids"] == json::array({m["layers"][0]["digest"], m["layers"][1]["digest"]}));
  CHECK(b->image.files == 2);
  CHECK(b->image.seed_bytes == 19);
  // On disk (as du and the kubelet's emptyDir sizeLimit count): 4 dirs and 2 files, a 4 KiB block each.
  CHECK(b->image.disk_bytes == 6 * 4096);
  // Reproducible: the same copy is the same image; one byte more is another.
  auto again = build_seed_image(files, {"empty"}, {{"io.lazyagent.run", "r-1"}});
  REQUIRE(again.ok());
  CHECK(again->image.digest == b->image.digest);
  auto other = build_seed_image({{"a.py", "print(2)\n", 0644}, files[1]}, {"empty"}, {{"io.lazyagent.run", "r-1"}});
  REQUIRE(other.ok());
  CHECK(other->image.layer_digest != b->image.layer_digest);
  CHECK(other->image.copier_digest == b->image.copier_digest);  // uploaded once per registry
}

TEST_CASE("seed image: more than 20,000 files or 100 MiB is refused naming the limit, a missing copier says what "
          "to install") {
  std::vector<K8sFile> many(kSeedImageMaxFiles + 1, K8sFile{"x", "", 0644});
  auto r = build_seed_image(many, {}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("20001 files, more than the registry path takes (20000)") != std::string::npos);
  auto big = build_seed_image({{"big", std::string(kSeedImageMaxBytes + 1, 'x'), 0644}}, {}, {});
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.find("more than the registry path takes") != std::string::npos);
  auto no = build_seed_image({{"a", "b", 0644}}, {}, {}, "/nonexistent/busybox");
  REQUIRE_FALSE(no.ok());
  CHECK(no.error().message.find("apt-get install busybox-static") != std::string::npos);
}

TEST_CASE("k8s seed image: expired only when its push time is older than the TTL", "[k8s_seed_image]") {
  using nlohmann::json;
  const std::int64_t now = 1800000000, ttl = 48 * 3600;
  CHECK(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", std::to_string(now - ttl - 1)}}, ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", std::to_string(now - ttl)}}, ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", std::to_string(now)}}, ttl, now));
  // No push time (an image from before the TTL), or one that is not a number: never by age.
  CHECK_FALSE(lazyagent::seed_image_expired(json::object(), ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", "-5"}}, ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", "12ab"}}, ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", 5}}, ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json{{"io.lazyagent.pushed", std::string(40, '9')}}, ttl, now));
  CHECK_FALSE(lazyagent::seed_image_expired(json(), ttl, now));
}
