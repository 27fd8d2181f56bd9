// A pause point for crash tests (tests/security/chaos_test.cpp), never for
// users: with LAZYAGENT_CRASH_PAUSE_AT=<point> in the environment, the
// pipeline stops when it reaches that point, writes its pid to
// $LAZYAGENT_CRASH_PAUSE_FILE, and sleeps until it is killed (at most 10
// minutes), so that a test can SIGKILL the CLI at an exact step: after the
// container was created, after it was initialized and verified, after it was
// started. Points: "after:<step>" for every step of sandbox_run.h, and
// "after:start". Without the variable this does nothing.
#pragma once

#include <string>

namespace lazyagent {

void crash_pause_point(const std::string& point);

}  // namespace lazyagent
