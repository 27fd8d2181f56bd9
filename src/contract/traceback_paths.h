// The seed's files that a test run's output points at. Pure.
//
// Runners name the code a failure went through as locations:
//   Python   File "/work/pkg/x.py", line 12, in f   (and pytest's "x.py:12: in f")
//   Go       x_test.go:12: want 5, got 1           (relative to the package)
//   C, C++, Rust, Node   src/a.c:3:5: error ... / panicked at src/lib.rs:10:5
// A location's path is matched against the seed's own paths: equal, or one
// ends with "/" + the other (the sandbox's /work prefix; a path relative to a
// Go package or to the directory the test command changed into, so a bare
// name may select several files of that name).
// The output is untrusted: it only ever selects among the seed's paths.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyagent {

// Seed paths named by `output`, in the order of their first mention, at most `max`.
std::vector<std::string> paths_named_by_output(std::string_view output, const std::vector<std::string>& seed_paths,
                                               std::size_t max = 20);

}  // namespace lazyagent
