// The one Catch2 include of every test file: Catch2 2.13 (Debian 12) or 3.x
// (Debian 13), chosen by the version CMake found (tests/tests.cmake defines
// LAZYAGENT_CATCH2_MAJOR). The tests use what both offer alike: TEST_CASE,
// SECTION, DYNAMIC_SECTION, GENERATE, CHECK/REQUIRE (and _FALSE, _NOTHROW),
// INFO, UNSCOPED_INFO, WARN, FAIL, Approx, Catch::getResultCapture().
// Catch2 3 split the single header into parts and moved Approx into the
// Catch namespace; this header includes them all and restores the old name.
// A script that lists tests asks the executable's --libidentify first: 2.x
// says --list-test-names-only, 3.x --list-tests --verbosity quiet
// (scripts/test.sh).
#pragma once

#if !defined(LAZYAGENT_CATCH2_MAJOR)
#error "LAZYAGENT_CATCH2_MAJOR is not defined: build the tests through tests/tests.cmake"
#elif LAZYAGENT_CATCH2_MAJOR == 2
#include <catch2/catch.hpp>
#elif LAZYAGENT_CATCH2_MAJOR == 3
#include <catch2/catch_all.hpp>
using Catch::Approx;
#else
#error "Catch2 2.13 or 3.x is needed"
#endif
