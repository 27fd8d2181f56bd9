// Fuzz target: the log demultiplexer (src/log_stream.*), which reads what a
// sandbox wrote, framed by podman (ARCHITECTURE invariants 5 and 8).
//
// Input: bytes 0-1 pick the budget (max_bytes, 0..65535); the rest is the raw
// log stream as GET /containers/{id}/logs returns it. Checked beyond crashes:
//   - output never exceeds the input nor the budget; out + err == combined;
//     in framed mode, payload + 8-byte headers never exceed the input, and a
//     stream not cut short is exactly its frames;
//   - a stream we frame ourselves (mux_frame over chunks of the input)
//     demultiplexes back to the same bytes, per stream and in order, and any
//     budget keeps exactly that prefix and says it cut;
//   - the text we would show (escape_for_terminal) has no control bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_checks.h"
#include "engine/podman/log_stream.h"
#include "util/terminal_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t budget = (std::size_t{data[0]} << 8) | data[1];
  const std::string_view raw(reinterpret_cast<const char*>(data) + 2, size - 2);

  const lazyagent::DemuxedLogs d = lazyagent::demux_logs(raw, budget);
  FUZZ_CHECK(d.combined.size() <= raw.size(), "demultiplexed output is no longer than the input");
  FUZZ_CHECK(d.combined.size() <= budget, "demultiplexed output stays within the budget");
  FUZZ_CHECK(d.out.size() + d.err.size() == d.combined.size(), "out + err == combined");
  if (d.frames > 0) {
    FUZZ_CHECK(d.combined.size() + 8 * d.frames <= raw.size(), "payload + headers within input");
    if (!d.truncated)
      FUZZ_CHECK(d.combined.size() + 8 * d.frames == raw.size(), "an uncut stream is all frames");
  } else if (!raw.empty() && !d.truncated) {
    FUZZ_CHECK(d.combined == raw && d.out == raw, "a tty stream passes through unchanged");
  }
  FUZZ_CHECK(lazyagent::fuzz::is_terminal_safe(lazyagent::escape_for_terminal(d.combined), true),
             "escaped log text has no control bytes");

  // Round trip: frame chunks of the input ourselves. Chunk i takes the next
  // (raw[k] % 17) bytes, on stdout when that byte is even, else stderr.
  std::string framed, all, out, err;
  std::size_t frames = 0;
  for (std::size_t k = 0; k < raw.size();) {
    const auto b = static_cast<unsigned char>(raw[k]);
    const std::string_view chunk = raw.substr(k, b % 17);
    const int stream = b % 2 == 0 ? 1 : 2;
    framed += lazyagent::mux_frame(stream, chunk);
    all += chunk;
    (stream == 1 ? out : err) += chunk;
    ++frames;
    k += std::max<std::size_t>(chunk.size(), 1);
  }
  if (frames == 0) return 0;
  const lazyagent::DemuxedLogs whole = lazyagent::demux_logs(framed, all.size());
  FUZZ_CHECK(whole.combined == all && whole.out == out && whole.err == err,
             "our own frames demultiplex back to the same bytes");
  FUZZ_CHECK(!whole.truncated && whole.frames == frames, "nothing cut, every frame counted");
  const lazyagent::DemuxedLogs cut = lazyagent::demux_logs(framed, budget);
  FUZZ_CHECK(cut.combined == all.substr(0, budget), "a budget keeps exactly the prefix");
  FUZZ_CHECK(cut.truncated == (budget < all.size()), "the cut is reported exactly when it happens");
  return 0;
}
