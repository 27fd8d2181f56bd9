#include "util/byte_frames.h"

namespace lazyagent {

namespace {

void append_length(std::string* out, std::uint64_t n) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

}  // namespace

void append_frame(std::string* out, std::string_view field) {
  append_length(out, field.size());
  out->append(field);
}

void append_frame(std::string* out, std::uint64_t number) {
  append_length(out, 8);
  append_length(out, number);
}

bool FrameReader::next(std::string* field) {
  if (!ok_ || rest_.size() < 8) return ok_ = false;
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(rest_[i])) << (8 * i);
  rest_.remove_prefix(8);
  if (n > rest_.size()) return ok_ = false;
  field->assign(rest_.substr(0, n));
  rest_.remove_prefix(n);
  return true;
}

bool FrameReader::next(std::uint64_t* number) {
  std::string bytes;
  if (!next(&bytes) || bytes.size() != 8) return ok_ = false;
  *number = 0;
  for (int i = 0; i < 8; ++i) *number |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return true;
}

}  // namespace lazyagent
