// Catch2's runner, compiled once for every test executable (tests/tests.cmake).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
