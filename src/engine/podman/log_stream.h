// Podman's log stream format, and bounding it.
//
// Without a tty, GET /containers/{id}/logs returns the docker multiplexed
// format: each frame is an 8-byte header {stream, 0, 0, 0, size (uint32 BE)}
// followed by `size` bytes; stream 1 is stdout, 2 is stderr. We keep the
// frames in order (the interleaving is what a user wants to read) and stop at
// a byte budget, saying so.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lazyagent {

struct DemuxedLogs {
  std::string combined;   // stdout and stderr payloads in arrival order
  std::string out;        // stdout only
  std::string err;        // stderr only
  bool truncated = false; // the budget cut the output, or the stream ended mid-frame
  std::size_t frames = 0;
};

// Demultiplex `raw`, keeping at most `max_bytes` of payload in `combined`
// (and in out/err). A stream that does not start with a valid frame header is
// treated as raw text (a container with a tty).
DemuxedLogs demux_logs(std::string_view raw, std::size_t max_bytes);

// Incremental frame decoder: each complete frame's payload, in order, to
// `payload`; a torn frame waits for the rest.
struct FrameDemux {
  std::string pending;
  void feed(std::string_view chunk, const std::function<void(std::string_view)>& payload);
};

// Incremental demultiplexer of a followed log (GET .../logs?follow=true):
// complete lines to `line` (a line longer than `max_line` is passed on in
// pieces of that size), everything to `all` (at most 4 MiB kept).
struct FollowedLog {
  FrameDemux frames;     // undecoded frame bytes
  std::string partial;   // an unfinished line
  std::string all;
  std::size_t max_line = 64 * 1024;
  std::function<void(const std::string&)> line;

  void feed(std::string_view chunk);
  void finish();  // the last, unterminated line

 private:
  void text(std::string_view t);
};

// Build one frame (tests and fuzzing use it).
std::string mux_frame(int stream, std::string_view payload);

}  // namespace lazyagent
