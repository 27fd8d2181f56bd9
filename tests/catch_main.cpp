// Catch2's runner, compiled once for every test executable (tests/tests.cmake).
// Catch2 2 writes main() itself when CATCH_CONFIG_MAIN is defined before its
// header; Catch2 3 has no such switch, so main() runs its Session here.
#define CATCH_CONFIG_MAIN
#include "catch_compat.h"

#if LAZYAGENT_CATCH2_MAJOR >= 3
int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
#endif
