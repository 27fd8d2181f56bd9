include(/usr/lib/cmake/Catch2/Catch.cmake)

# Every test executable is made the same way, so that they share one
# precompiled header (Catch2 + nlohmann/json are most of a test file's compile
# time) and one compiled Catch2 runner (tests/catch_main.cpp, ~30 s to compile).
# Tests are compiled without optimisation (-O0, half the compile time of -O2):
# they spend their time waiting on podman, not computing. The library they
# link is the same optimised one the CLI uses.
add_library(lazyagent_catch_main OBJECT ${CMAKE_SOURCE_DIR}/tests/catch_main.cpp)
target_link_libraries(lazyagent_catch_main PRIVATE Catch2::Catch2)
target_compile_options(lazyagent_catch_main PRIVATE -O0)
set(LAZYAGENT_TEST_PCH_DONOR "")
function(lazyagent_test_executable target)
  # catch_discover_tests hands test names through CMake lists: a ';' in a name
  # splits it into names that match nothing (each then fails). Refuse it here,
  # at configure time, naming the file and the line.
  foreach(src ${ARGN})
    file(STRINGS ${src} bad REGEX "TEST_CASE\\(\"[^\"]*;")
    if(bad)
      list(GET bad 0 first)
      message(FATAL_ERROR "${src}: a test name holds ';' (ctest would split it; use ','): ${first}")
    endif()
  endforeach()
  add_executable(${target} ${ARGN} $<TARGET_OBJECTS:lazyagent_catch_main>)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/tests/integration)
  target_link_libraries(${target} PRIVATE lazyagent Catch2::Catch2)
  target_compile_options(${target} PRIVATE -O0)
  target_compile_definitions(${target} PRIVATE
    LAZYAGENT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    LAZYAGENT_BINARY="$<TARGET_FILE:lazyagent-oci>")
  add_dependencies(${target} lazyagent-oci)
  if(LAZYAGENT_TEST_PCH_DONOR STREQUAL "")
    target_precompile_headers(${target} PRIVATE <catch2/catch.hpp> <nlohmann/json.hpp> <string> <vector>
      <map> <functional> <fstream> <sstream> <chrono> <thread> <filesystem>)
    set(LAZYAGENT_TEST_PCH_DONOR ${target} PARENT_SCOPE)
  else()
    target_precompile_headers(${target} REUSE_FROM ${LAZYAGENT_TEST_PCH_DONOR})
  endif()
endfunction()

# Unit tests: pure code, no podman needed. Each Catch2 test case is one ctest test.
file(GLOB UNIT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/*.cpp)
lazyagent_test_executable(unit_tests ${UNIT_SOURCES})
# --warn NoTests: a test name that matches nothing (a ';' in a name splits it
# in CMake's lists) must fail, never pass having run zero tests.
catch_discover_tests(unit_tests TEST_PREFIX "unit: " EXTRA_ARGS --warn NoTests PROPERTIES LABELS unit)

# Integration tests: the real podman service, real images, the real CLI binary.
# They share one podman service and count its containers, so they run one at a time.
file(GLOB INTEGRATION_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/*.cpp)
lazyagent_test_executable(integration_tests ${INTEGRATION_SOURCES})
catch_discover_tests(integration_tests TEST_PREFIX "integration: " EXTRA_ARGS --warn NoTests
  PROPERTIES LABELS integration RESOURCE_LOCK podman TIMEOUT 600)

# Security tests: attacks on the sandbox's invariants (ARCHITECTURE section 3),
# each of which would succeed if its invariant broke. Same harness and podman
# lock as the integration tests.
file(GLOB SECURITY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/security/*.cpp)
lazyagent_test_executable(security_tests ${SECURITY_SOURCES} ${CMAKE_SOURCE_DIR}/tests/integration/harness.cpp)
catch_discover_tests(security_tests TEST_PREFIX "security: " EXTRA_ARGS --warn NoTests
  PROPERTIES LABELS security RESOURCE_LOCK podman TIMEOUT 600)

# The real-projects corpus (tests/corpus/): open-source projects from Debian's
# source packages, each with its environment (built with network on first
# use, then cached as an image), an injected bug, its fix and a wrong fix.
# The first run downloads and builds (minutes); a second one reuses both.
file(GLOB CORPUS_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/corpus/*.cpp)
lazyagent_test_executable(corpus_tests ${CORPUS_SOURCES} ${CMAKE_SOURCE_DIR}/tests/integration/harness.cpp)
catch_discover_tests(corpus_tests TEST_PREFIX "corpus: " EXTRA_ARGS --warn NoTests
  PROPERTIES LABELS corpus RESOURCE_LOCK podman TIMEOUT 900)

# The docs check (tests/docs/check_docs.py): every command block of README.md
# and docs/*.md runs here and succeeds, or says why it cannot; every synopsis
# names the options --help lists. --self-test first proves on
# tests/docs/fixtures that the check fails when a doc is wrong. It runs the
# documented commands for real (the demo, exports under runc and
# podman-compose), so it takes the podman lock.
add_test(NAME "docs: the commands in README.md and docs/*.md"
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/docs/check_docs.py --self-test --repo ${CMAKE_SOURCE_DIR}
          --binary $<TARGET_FILE:lazyagent-oci>)
set_tests_properties("docs: the commands in README.md and docs/*.md" PROPERTIES
  LABELS "docs;integration" RESOURCE_LOCK podman TIMEOUT 1800)

# Every program the scripts, the build and Kubernetes' build run is installed
# by the set-up (issue 12): scripts/check-host-commands.py over this build
# directory; its negative control (a copy of the install list without rsync
# must fail, naming rsync and where Kubernetes' build calls it); the scanner's
# own tests (builtins, functions, containers, wrappers).
add_test(NAME "deps: every command the scripts, the build and Kubernetes' build run is installed by the set-up"
  COMMAND python3 ${CMAKE_SOURCE_DIR}/scripts/check-host-commands.py --build-dir ${CMAKE_BINARY_DIR})
add_test(NAME "deps: a copy of the install list without rsync fails the check"
  COMMAND ${CMAKE_SOURCE_DIR}/tests/deps/without-rsync.sh ${CMAKE_BINARY_DIR})
add_test(NAME "deps: the command scanner"
  COMMAND python3 -m unittest -v check_host_commands_test
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/deps)
set_tests_properties("deps: every command the scripts, the build and Kubernetes' build run is installed by the set-up"
  "deps: a copy of the install list without rsync fails the check" "deps: the command scanner"
  PROPERTIES LABELS unit TIMEOUT 120)

# The MCP server (src/cli/mcp_server.h) driven by the official MCP TypeScript
# SDK's client (tests/mcp/client_test.mjs; the SDK pinned in
# tests/mcp/package-lock.json, installed under the build directory by
# tests/mcp/run_client.sh): initialize, tools, patches proven end to end, a
# refused seed, malformed calls, a cancellation mid-run. Real podman.
add_test(NAME "mcp: the official TypeScript SDK client drives lazyagent-oci mcp"
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/mcp/run_client.sh ${CMAKE_BINARY_DIR} $<TARGET_FILE:lazyagent-oci> ${CMAKE_SOURCE_DIR})
set_tests_properties("mcp: the official TypeScript SDK client drives lazyagent-oci mcp" PROPERTIES
  LABELS "mcp;integration" RESOURCE_LOCK podman TIMEOUT 900)

# An ordinary user on the user's own rootless podman (tests/rootless/, issue 29):
# creates a test user, prepares it with scripts/setup-rootless.sh, runs as that
# user (doctor, the refusal without --accept-weaker-policy on cgroup v1, a proven
# fix, network/secret/ownership/nproc attacks, no leftovers), then removes the
# user, its service and its processes. Needs root and the sandbox image.
add_test(NAME "rootless: an ordinary user's own podman proves a fix under the same policy"
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rootless/rootless_test.sh $<TARGET_FILE:lazyagent-oci> ${CMAKE_SOURCE_DIR})
set_tests_properties("rootless: an ordinary user's own podman proves a fix under the same policy" PROPERTIES
  LABELS "rootless;integration" RESOURCE_LOCK podman TIMEOUT 900)

# The session tools (src/cli/mcp_session_tools.cpp) through the same client:
# a bug worked to a proven fix inside a session, across a reconnect.
add_test(NAME "mcp: the official TypeScript SDK client works a bug to a proven fix in a session"
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/mcp/run_client.sh ${CMAKE_BINARY_DIR} $<TARGET_FILE:lazyagent-oci> ${CMAKE_SOURCE_DIR}
          session_client_test.mjs)
set_tests_properties("mcp: the official TypeScript SDK client works a bug to a proven fix in a session" PROPERTIES
  LABELS "mcp;integration" RESOURCE_LOCK podman TIMEOUT 900)
