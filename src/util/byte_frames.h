// Length-prefixed byte fields: how a child process hands a value back to its
// parent through a pipe (user_namespace.h) when the value holds any bytes at
// all (a file's content, a name the sandbox chose). Each field is its length
// as 8 little-endian bytes, then the bytes; no escaping, no text encoding.
// Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lazyagent {

// Appends one field to `out`.
void append_frame(std::string* out, std::string_view field);
void append_frame(std::string* out, std::uint64_t number);

// Reads the fields back in order. A short or overlong field makes every
// later read fail (ok() false): the bytes did not come from append_frame.
class FrameReader {
 public:
  explicit FrameReader(std::string_view bytes) : rest_(bytes) {}
  bool next(std::string* field);
  bool next(std::uint64_t* number);
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && rest_.empty(); }

 private:
  std::string_view rest_;
  bool ok_ = true;
};

}  // namespace lazyagent
