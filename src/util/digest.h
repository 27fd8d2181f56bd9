// Content hashes for provenance (patch, seed snapshot, policy).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace lazyagent {

// Lower-case hex sha256 of the bytes.
std::string sha256_hex(std::string_view bytes);

// "sha256:" plus the first 12 hex digits of an image digest (or an id's
// first 12 hex digits when it has no algorithm prefix): enough to tell
// images apart, as `podman images` shows them.
std::string short_digest(std::string_view digest);
// An image's hash for people, labelled and 12 hex digits long as podman
// shows ids: "digest sha256:0123456789ab" for a digest ("ALGO:HEX"), "id
// 0123456789ab" for an image id (bare hex); "" for "". What env build, env
// list, doctor and test print.
std::string image_hash_text(std::string_view hash);

// The same hash fed in pieces, for content streamed from disk (a seed file is
// never held whole in memory to be hashed).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view bytes);
  // Lower-case hex; the object is spent afterwards.
  std::string hex();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace lazyagent
