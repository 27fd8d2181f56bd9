#include "engine/podman/log_stream.h"

#include <algorithm>
#include <cstdint>

namespace lazyagent {
namespace {

bool looks_like_header(std::string_view raw) {
  if (raw.size() < 8) return false;
  const auto s = static_cast<unsigned char>(raw[0]);
  return (s == 0 || s == 1 || s == 2) && raw[1] == 0 && raw[2] == 0 && raw[3] == 0;
}

// Append up to the remaining budget; returns false once the budget is spent.
bool append_bounded(DemuxedLogs& logs, std::string& stream, std::string_view payload,
                    std::size_t max_bytes) {
  const std::size_t room = max_bytes - std::min(max_bytes, logs.combined.size());
  const std::size_t take = std::min(room, payload.size());
  logs.combined.append(payload.substr(0, take));
  stream.append(payload.substr(0, take));
  if (take < payload.size()) {
    logs.truncated = true;
    return false;
  }
  return true;
}

}  // namespace

DemuxedLogs demux_logs(std::string_view raw, std::size_t max_bytes) {
  DemuxedLogs logs;
  if (raw.empty()) return logs;
  if (!looks_like_header(raw)) {  // tty mode: one raw stream
    append_bounded(logs, logs.out, raw, max_bytes);
    return logs;
  }
  std::size_t pos = 0;
  while (pos < raw.size()) {
    if (!looks_like_header(raw.substr(pos))) {
      logs.truncated = true;  // torn or corrupt frame: stop, say so
      break;
    }
    const auto* h = reinterpret_cast<const unsigned char*>(raw.data() + pos);
    const std::uint32_t size = (std::uint32_t{h[4]} << 24) | (std::uint32_t{h[5]} << 16) |
                               (std::uint32_t{h[6]} << 8) | std::uint32_t{h[7]};
    pos += 8;
    std::string_view payload = raw.substr(pos, size);
    const bool torn = payload.size() < size;
    ++logs.frames;
    std::string& stream = (h[0] == 2) ? logs.err : logs.out;
    if (!append_bounded(logs, stream, payload, max_bytes)) break;
    if (torn) {
      logs.truncated = true;
      break;
    }
    pos += size;
  }
  return logs;
}

std::string mux_frame(int stream, std::string_view payload) {
  std::string f(8, '\0');
  f[0] = static_cast<char>(stream);
  const auto n = static_cast<std::uint32_t>(payload.size());
  f[4] = static_cast<char>((n >> 24) & 0xff);
  f[5] = static_cast<char>((n >> 16) & 0xff);
  f[6] = static_cast<char>((n >> 8) & 0xff);
  f[7] = static_cast<char>(n & 0xff);
  f.append(payload);
  return f;
}

void FrameDemux::feed(std::string_view chunk, const std::function<void(std::string_view)>& payload) {
  pending.append(chunk);
  std::size_t pos = 0;
  while (pending.size() - pos >= 8) {
    const auto* h = reinterpret_cast<const unsigned char*>(pending.data() + pos);
    const std::size_t size = (std::size_t{h[4]} << 24) | (std::size_t{h[5]} << 16) | (std::size_t{h[6]} << 8) | h[7];
    if (pending.size() - pos - 8 < size) break;
    payload(std::string_view(pending).substr(pos + 8, size));
    pos += 8 + size;
  }
  pending.erase(0, pos);
}

void FollowedLog::feed(std::string_view chunk) {
  frames.feed(chunk, [this](std::string_view t) { text(t); });
}

void FollowedLog::text(std::string_view t) {
  if (all.size() < (4u << 20)) all.append(t);
  partial.append(t);
  std::size_t nl = 0;
  while ((nl = partial.find('\n')) != std::string::npos) {
    line(partial.substr(0, nl));
    partial.erase(0, nl + 1);
  }
  while (partial.size() > max_line) {
    line(partial.substr(0, max_line));
    partial.erase(0, max_line);
  }
}

void FollowedLog::finish() {
  if (!partial.empty()) line(partial);
  partial.clear();
}

}  // namespace lazyagent
