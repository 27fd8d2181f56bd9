include(/usr/lib/cmake/Catch2/Catch.cmake)

# Unit tests: pure code, no podman needed. Each Catch2 test case is one ctest test.
file(GLOB UNIT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/*.cpp)
add_executable(unit_tests ${UNIT_SOURCES})
target_link_libraries(unit_tests PRIVATE lazyagent Catch2::Catch2)
target_compile_definitions(unit_tests PRIVATE LAZYAGENT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# --warn NoTests: a test name that matches nothing (a ';' in a name splits it
# in CMake's lists) must fail, never pass having run zero tests.
catch_discover_tests(unit_tests TEST_PREFIX "unit: " EXTRA_ARGS --warn NoTests PROPERTIES LABELS unit)

# Integration tests: the real podman service, real images, the real CLI binary.
# They share one podman service and count its containers, so they run one at a time.
file(GLOB INTEGRATION_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/*.cpp)
add_executable(integration_tests ${INTEGRATION_SOURCES})
target_link_libraries(integration_tests PRIVATE lazyagent Catch2::Catch2)
target_compile_definitions(integration_tests PRIVATE
  LAZYAGENT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
  LAZYAGENT_BINARY="$<TARGET_FILE:lazyagent-oci>")
add_dependencies(integration_tests lazyagent-oci)
catch_discover_tests(integration_tests TEST_PREFIX "integration: " EXTRA_ARGS --warn NoTests
  PROPERTIES LABELS integration RESOURCE_LOCK podman TIMEOUT 600)

# Security tests: attacks on the sandbox's invariants (ARCHITECTURE section 3),
# each of which would succeed if its invariant broke. Same harness and podman
# lock as the integration tests.
file(GLOB SECURITY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/security/*.cpp)
add_executable(security_tests ${SECURITY_SOURCES} ${CMAKE_SOURCE_DIR}/tests/integration/harness.cpp)
target_include_directories(security_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests/integration)
target_link_libraries(security_tests PRIVATE lazyagent Catch2::Catch2)
target_compile_definitions(security_tests PRIVATE
  LAZYAGENT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
  LAZYAGENT_BINARY="$<TARGET_FILE:lazyagent-oci>")
add_dependencies(security_tests lazyagent-oci)
catch_discover_tests(security_tests TEST_PREFIX "security: " EXTRA_ARGS --warn NoTests
  PROPERTIES LABELS security RESOURCE_LOCK podman TIMEOUT 600)
