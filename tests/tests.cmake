# Unit tests: pure code, no podman needed.
file(GLOB UNIT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/*.cpp)
add_executable(unit_tests ${UNIT_SOURCES})
target_link_libraries(unit_tests PRIVATE lazyagent Catch2::Catch2)
target_compile_definitions(unit_tests PRIVATE
  LAZYAGENT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_test(NAME unit COMMAND unit_tests)

# Integration tests: real podman service, real images, the real CLI binary.
file(GLOB INTEGRATION_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/*.cpp)
if(INTEGRATION_SOURCES)
  add_executable(integration_tests ${INTEGRATION_SOURCES})
  target_link_libraries(integration_tests PRIVATE lazyagent Catch2::Catch2)
  target_compile_definitions(integration_tests PRIVATE
    LAZYAGENT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    LAZYAGENT_BINARY="$<TARGET_FILE:lazyagent-oci>")
  add_dependencies(integration_tests lazyagent-oci)
  add_test(NAME integration COMMAND integration_tests)
  set_tests_properties(integration PROPERTIES LABELS podman TIMEOUT 1200)
endif()
