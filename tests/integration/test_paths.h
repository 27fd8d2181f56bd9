// Where this build's source tree and CLI binary are, for the tests.
//
// They come from one generated file (build/generated/test_paths.cpp, written
// by tests/tests.cmake), not from compile definitions: then no test object
// holds a path, and the compiler cache (ccache, scripts/setup.sh) reuses
// every test object in a clone at another path, as CI's is.
#pragma once

const char* lazyagent_test_source_dir();
const char* lazyagent_test_binary();

#define LAZYAGENT_SOURCE_DIR (lazyagent_test_source_dir())
#define LAZYAGENT_BINARY (lazyagent_test_binary())
