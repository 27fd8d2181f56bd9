// The user's own user namespace (util/user_namespace.h) and the byte frames
// its child answers in (util/byte_frames.h): the map rootless podman makes,
// newuidmap's arguments, the answer's encoding, and one real trip through a
// namespace mapped to this process's own ids (the one map newuidmap gives any
// user without /etc/subuid: the rootless test, tests/rootless, maps the
// subordinate ids).
#include "catch_compat.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "util/byte_frames.h"
#include "util/user_namespace.h"

using namespace lazyagent;
using Strings = std::vector<std::string>;

TEST_CASE("byte frames carry any bytes back in order and refuse a cut or padded input", "[userns]") {
  const std::string binary("a\0b\xff\n", 5);
  std::string bytes;
  append_frame(&bytes, binary);
  append_frame(&bytes, std::uint64_t{0x1122334455667788});
  append_frame(&bytes, "");
  FrameReader in(bytes);
  std::string a, empty;
  std::uint64_t n = 0;
  REQUIRE(in.next(&a));
  REQUIRE(in.next(&n));
  REQUIRE(in.next(&empty));
  CHECK(a == binary);
  CHECK(n == 0x1122334455667788u);
  CHECK(empty.empty());
  CHECK(in.at_end());
  CHECK_FALSE(in.next(&a));  // nothing left

  FrameReader cut(std::string_view(bytes).substr(0, bytes.size() - 1));
  CHECK(cut.next(&a));
  CHECK(cut.next(&n));
  CHECK_FALSE(cut.next(&empty));  // its length frame is short
  CHECK_FALSE(cut.ok());
  FrameReader overlong(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f" "abc", 11));
  CHECK_FALSE(overlong.next(&a));
  FrameReader not_a_number(bytes);
  CHECK_FALSE(not_a_number.next(&n));  // a 5-byte field is no number
  CHECK_FALSE(not_a_number.next(&a));  // and every later read fails
}

TEST_CASE("a user's namespace maps 0 to the user and 1.. to the first subordinate range, as rootless podman's", "[userns]") {
  const UserNsMap m = rootless_user_map("rl", 1001, 1002, IdRange{100000, 65536}, IdRange{200000, 65536});
  CHECK(id_map_arguments(4242, m.uids) == Strings{"4242", "0", "1001", "1", "1", "100000", "65536"});
  CHECK(id_map_arguments(4242, m.gids) == Strings{"4242", "0", "1002", "1", "1", "200000", "65536"});
  CHECK(m.who == "rl");
  CHECK(id_map_arguments(7, {}) == Strings{"7"});
}

TEST_CASE("the child's answer carries a value's bytes or an error's kind and message", "[userns]") {
  const std::string binary("\0\x01 file\xfe", 8);
  auto value = decode_child_answer(encode_child_answer(binary));
  REQUIRE(value);
  CHECK(*value == binary);
  auto error = decode_child_answer(encode_child_answer(usage_error("no such file")));
  REQUIRE_FALSE(error);
  CHECK(error.error().kind == ErrorKind::kUsage);
  CHECK(error.error().message == "no such file");
  auto isolation = decode_child_answer(encode_child_answer(Error{ErrorKind::kIsolation, "x"}));
  CHECK(isolation.error().kind == ErrorKind::kIsolation);

  const std::string whole = encode_child_answer(std::string("abc"));
  auto cut = decode_child_answer(whole.substr(0, whole.size() - 1));
  REQUIRE_FALSE(cut);
  CHECK(cut.error().kind == ErrorKind::kEngine);
  CHECK(cut.error().message == "the user namespace's child answered " + std::to_string(whole.size() - 1) +
                                   " bytes that are no answer (it stopped midway?)");
  std::string bad_kind;
  append_frame(&bad_kind, std::uint64_t{99});
  append_frame(&bad_kind, "x");
  CHECK_FALSE(decode_child_answer(bad_kind));
  CHECK_FALSE(decode_child_answer(""));
}

TEST_CASE("a function runs in a new user namespace mapped by newuidmap and hands back its answer", "[userns]") {
  // This process's own ids: newuidmap maps them for anyone (package uidmap,
  // scripts/setup.sh installs it).
  UserNsMap own;
  own.who = "this test";
  own.uids = {{0, static_cast<std::int64_t>(::geteuid()), 1}};
  own.gids = {{0, static_cast<std::int64_t>(::getegid()), 1}};
  auto maps = run_in_user_namespace(
      own,
      []() -> Result<std::string> {
        std::ifstream u("/proc/self/uid_map"), g("/proc/self/gid_map");
        std::stringstream ss;
        ss << u.rdbuf() << g.rdbuf() << "uid " << ::geteuid();
        return ss.str();
      },
      4096);
  REQUIRE(maps);
  std::istringstream in(*maps);
  std::int64_t inside = -1, outside = -1, count = -1;
  in >> inside >> outside >> count;
  CHECK((inside == 0 && outside == ::geteuid() && count == 1));
  in >> inside >> outside >> count;
  CHECK((inside == 0 && outside == ::getegid() && count == 1));
  CHECK(maps->substr(maps->rfind("uid ")) == "uid 0");  // root in there

  auto refused = run_in_user_namespace(own, []() -> Result<std::string> { return usage_error("refused inside"); }, 64);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().kind == ErrorKind::kUsage);
  CHECK(refused.error().message == "refused inside");

  auto large = run_in_user_namespace(own, []() -> Result<std::string> { return std::string(1 << 20, 'x'); }, 1000);
  REQUIRE_FALSE(large);
  CHECK(large.error().message == "the answer from the user namespace is larger than 1000 bytes");
  auto just_over = run_in_user_namespace(own, []() -> Result<std::string> { return std::string(1001, 'x'); }, 1000);
  CHECK_FALSE(just_over);
  auto long_error = run_in_user_namespace(  // an error's message is not held to the value's cap
      own, []() -> Result<std::string> { return usage_error(std::string(2000, 'e')); }, 0);
  CHECK(long_error.error().message == std::string(2000, 'e'));

  // Ids /etc/subuid does not give this process: newuidmap refuses, the fix named.
  UserNsMap foreign = own;
  foreign.uids.push_back({1, 3999000000, 10});
  auto unmapped = run_in_user_namespace(foreign, []() -> Result<std::string> { return std::string("ran"); }, 64);
  REQUIRE_FALSE(unmapped);
  CHECK(unmapped.error().kind == ErrorKind::kUsage);
  CHECK(unmapped.error().message.rfind("mapping this test's ids into a user namespace: `newuidmap ", 0) == 0);
  CHECK(unmapped.error().message.find(": /etc/subuid must give this test these ids (as root, "
                                      "scripts/setup-rootless.sh this test)") != std::string::npos);
}

TEST_CASE("a program that is missing or fails is named with its status and last line of stderr", "[userns]") {
  CHECK(run_program({"true"}));
  auto missing = run_program({"lazyagent-no-such-program"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().kind == ErrorKind::kUsage);
  CHECK(missing.error().message == "lazyagent-no-such-program is not installed (not found in PATH)");
  auto failed = run_program({"sh", "-c", "echo first >&2; echo last line >&2; exit 3"});
  REQUIRE_FALSE(failed);
  CHECK(failed.error().kind == ErrorKind::kEngine);
  CHECK(failed.error().message == "`sh -c echo first >&2; echo last line >&2; exit 3` exited 3: last line");
}
