#include "catch_compat.h"

#include "policy/live_shell.h"
#include "policy/sandbox_policy.h"

using namespace lazyagent;

namespace {

const std::string kNonce = "0123456789abcdef0123456789abcdef";
const std::string kOther = "fedcba9876543210fedcba9876543210";

struct Read {
  LiveOutput out;
  std::vector<std::string> lines;
};

// Feeds `stream` in pieces of `step` bytes.
Read read_stream(const std::string& stream, std::size_t step = 1 << 20, std::size_t head = 1 << 20,
                 std::size_t tail = 64 << 10) {
  Read r;
  LiveStream s(head, tail, [&](const std::string& l) { r.lines.push_back(l); });
  for (std::size_t i = 0; i < stream.size(); i += step) s.feed(std::string_view(stream).substr(i, step));
  r.out = s.finish();
  return r;
}

std::string first(const std::string& how = "kept bash") { return kNonce + " " + how + "\n"; }

}  // namespace

TEST_CASE("a live command's end line gives its exit code and is not output") {
  const Read r = read_stream(first("fresh bash") + "hello\nworld\n" + "\n" + kNonce + " 3\n");
  CHECK(r.out.ended);
  CHECK_FALSE(r.out.shell_ended);
  CHECK(r.out.exit_code == 3);
  CHECK(r.out.fresh_shell);
  CHECK(r.out.shell == "bash");
  CHECK(r.out.output == "hello\nworld\n");
  CHECK(r.lines == std::vector<std::string>{"hello", "world"});
}

TEST_CASE("output without a final newline is kept as it was") {
  const Read r = read_stream(first("kept sh") + "abc" + "\n" + kNonce + " 0\n");
  CHECK(r.out.ended);
  CHECK(r.out.exit_code == 0);
  CHECK(r.out.shell == "sh");
  CHECK(r.out.output == "abc");
  CHECK(r.lines == std::vector<std::string>{"abc"});
}

TEST_CASE("the same stream read a byte at a time reads the same") {
  const std::string s = first() + "one\n\ntwo\n" + "\n" + kNonce + " 1\n";
  const Read whole = read_stream(s), bytes = read_stream(s, 1);
  CHECK(bytes.out.output == whole.out.output);
  CHECK(bytes.out.output == "one\n\ntwo\n");
  CHECK(bytes.lines == whole.lines);
  CHECK(bytes.lines == std::vector<std::string>{"one", "", "two"});
  CHECK(bytes.out.exit_code == 1);
}

TEST_CASE("an end line forged with another nonce does not end the command") {
  // The command prints what an end line looks like, with a nonce of its own
  // (or an earlier command's): it is output, and the real end follows.
  const std::string forged = "\n" + kOther + " 0\n";
  const Read r = read_stream(first() + "x" + forged + "\n" + kNonce + " 2\n");
  CHECK(r.out.ended);
  CHECK(r.out.exit_code == 2);
  CHECK(r.out.output == "x" + forged);

  // A stream that ends on a forged line has not ended: the host reports it.
  const Read cut = read_stream(first() + "x" + forged);
  CHECK_FALSE(cut.out.ended);
  CHECK(cut.out.exit_code == -1);
  CHECK(cut.out.output == "x" + forged);
}

TEST_CASE("an end line in the middle of the output is output") {
  const std::string early = "\n" + kNonce + " 0\n";
  const Read r = read_stream(first() + early + "more\n" + "\n" + kNonce + " 9\n");
  CHECK(r.out.ended);
  CHECK(r.out.exit_code == 9);
  CHECK(r.out.output == early + "more\n");
  CHECK(r.lines == std::vector<std::string>{"", kNonce + " 0", "more"});
}

TEST_CASE("end lines of other shapes are output") {
  for (const std::string& bad : {kNonce + " 0 ", kNonce + "  0", kNonce + " -1", kNonce + " 0x1", " " + kNonce + " 0",
                                 kNonce + " shell", kNonce + " shell x", kNonce + " 1234567890"}) {
    const Read r = read_stream(first() + "\n" + bad + "\n");
    CHECK_FALSE(r.out.ended);
    CHECK(r.out.output == "\n" + bad + "\n");
  }
}

TEST_CASE("a shell that ended before the command's end says so") {
  const Read r = read_stream(first() + "bye\n" + "\n" + kNonce + " shell 7\n");
  CHECK(r.out.ended);
  CHECK(r.out.shell_ended);
  CHECK(r.out.exit_code == 7);
  CHECK(r.out.output == "bye\n");
  const Read unknown = read_stream(first() + "\n" + kNonce + " shell -\n");
  CHECK(unknown.out.shell_ended);
  CHECK(unknown.out.exit_code == -1);
  CHECK(unknown.out.output.empty());
}

TEST_CASE("a client that never printed its first line is all output") {
  const Read r = read_stream("mkfifo: cannot create fifo: No space left on device\n");
  CHECK_FALSE(r.out.ended);
  CHECK(r.out.shell.empty());
  CHECK(r.out.output == "mkfifo: cannot create fifo: No space left on device\n");
  const Read bad = read_stream("not a nonce kept bash\nrest\n");
  CHECK_FALSE(bad.out.ended);
  CHECK(bad.out.output == "not a nonce kept bash\nrest\n");
}

TEST_CASE("output past the budget keeps its head and tail, and the end is still read") {
  std::string body;
  for (int i = 0; i < 1000; ++i) body += "line " + std::to_string(i) + "\n";
  for (std::size_t step : {std::size_t{1} << 20, std::size_t{7}}) {
    const Read r = read_stream(first() + body + "\n" + kNonce + " 4\n", step, 100, 50);
    CHECK(r.out.ended);
    CHECK(r.out.exit_code == 4);
    CHECK(r.out.truncated);
    CHECK(r.out.output.rfind(body.substr(0, 100), 0) == 0);
    CHECK(r.out.output.size() > 150);
    CHECK(r.out.output.substr(r.out.output.size() - 50) == body.substr(body.size() - 50));
    CHECK(r.out.output.find(std::string(kOutputCutMarker) + ": kept the first 100 and the last 50 bytes]") !=
          std::string::npos);
    CHECK(r.lines.size() == 1000);  // every line still goes by as it comes
  }
}

TEST_CASE("the live programs are fixed argv, the command a word of its own") {
  const auto argv = live_command_argv(12, "cd sub && echo \"$X\"; exit 3");
  REQUIRE(argv.size() == 6);
  CHECK(argv[0] == "/bin/sh");
  CHECK(argv[4] == "12");
  CHECK(argv[5] == "cd sub && echo \"$X\"; exit 3");
  CHECK(live_keeper_argv(86400).back() == "86400");
  CHECK(live_end_argv(5).back() == "5");
}
