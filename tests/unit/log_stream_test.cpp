#include "catch_compat.h"

#include "engine/podman/log_stream.h"

using namespace lazyagent;

TEST_CASE("demux keeps stdout and stderr frames in order") {
  const std::string raw = mux_frame(1, "out1\n") + mux_frame(2, "err1\n") + mux_frame(1, "out2\n");
  const DemuxedLogs d = demux_logs(raw, 1 << 20);
  CHECK(d.combined == "out1\nerr1\nout2\n");
  CHECK(d.out == "out1\nout2\n");
  CHECK(d.err == "err1\n");
  CHECK(d.frames == 3);
  CHECK_FALSE(d.truncated);
}

TEST_CASE("demux stops at the byte budget and says so") {
  const std::string raw = mux_frame(1, std::string(100, 'a')) + mux_frame(2, std::string(100, 'b'));
  const DemuxedLogs d = demux_logs(raw, 150);
  CHECK(d.combined.size() == 150);
  CHECK(d.combined == std::string(100, 'a') + std::string(50, 'b'));
  CHECK(d.truncated);
}

TEST_CASE("demux reports a torn final frame") {
  std::string raw = mux_frame(1, "complete\n") + mux_frame(1, "torn frame payload");
  raw.resize(raw.size() - 5);
  const DemuxedLogs d = demux_logs(raw, 1 << 20);
  CHECK(d.combined == "complete\ntorn frame pa");
  CHECK(d.truncated);
}

TEST_CASE("demux treats a stream without frame headers as raw tty text") {
  const DemuxedLogs d = demux_logs("plain text\n", 1 << 20);
  CHECK(d.combined == "plain text\n");
  CHECK(d.frames == 0);
}

TEST_CASE("demux handles payloads with NUL bytes and large sizes") {
  const std::string payload("a\0b", 3);
  const std::string big(70000, 'x');
  const DemuxedLogs d = demux_logs(mux_frame(1, payload) + mux_frame(2, big), 1 << 20);
  CHECK(d.out == payload);
  CHECK(d.err.size() == 70000);
}

TEST_CASE("demux stops at a corrupt header instead of misreading") {
  std::string raw = mux_frame(1, "ok\n");
  raw += std::string("\x07garbage", 8);
  const DemuxedLogs d = demux_logs(raw, 1 << 20);
  CHECK(d.combined == "ok\n");
  CHECK(d.truncated);
}
