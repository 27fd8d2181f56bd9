# libFuzzer targets over the code that reads untrusted input (docs/fuzzing.md).
#
# A build directory of its own, with clang (libFuzzer ships with it):
#   cmake -S . -B build-fuzz -DLAZYAGENT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++
#   cmake --build build-fuzz --target fuzzers
# or simply scripts/fuzz.sh [SECONDS_PER_TARGET].
#
# The library is compiled with coverage instrumentation for libFuzzer
# (fuzzer-no-link) plus AddressSanitizer and UndefinedBehaviorSanitizer; any
# sanitizer report aborts (no recovery), so libFuzzer records it as a crash and
# keeps the input. Each fuzz/<name>_fuzzer.cpp is one target; its seeds are in
# fuzz/corpus/<name>/ and its dictionary, if any, is fuzz/<name>.dict.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LAZYAGENT_FUZZ=ON needs clang++ for libFuzzer: "
                      "add -DCMAKE_CXX_COMPILER=clang++ (Debian packages clang, libclang-rt-14-dev)")
endif()

set(LAZYAGENT_FUZZ_SANITIZERS "address,undefined")
set(LAZYAGENT_FUZZ_FLAGS -fno-omit-frame-pointer -fno-sanitize-recover=all -g)

# The library sources the targets reach, instrumented (the whole library would
# cost minutes of sanitizer builds on a small machine for code never reached).
# A link error here means a target reached a new file: add it to the list.
set(LAZYAGENT_FUZZ_LIB_SOURCES
  config patch_contract strict_json utf8 digest log_stream terminal_text verdict runner_report junit_report
  provider_client http_transfer interrupt planner_task path_glob unified_diff diff_contract diff_apply
  diff_write patch_format change_set seed_snapshot seed_source git_process suspicious_code)
list(TRANSFORM LAZYAGENT_FUZZ_LIB_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/)
list(TRANSFORM LAZYAGENT_FUZZ_LIB_SOURCES APPEND .cpp)
add_library(lazyagent_fuzz_core STATIC ${LAZYAGENT_FUZZ_LIB_SOURCES})
target_include_directories(lazyagent_fuzz_core PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(lazyagent_fuzz_core PUBLIC LAZYAGENT_VERSION="${PROJECT_VERSION}")
target_compile_options(lazyagent_fuzz_core PRIVATE
  -fsanitize=fuzzer-no-link,${LAZYAGENT_FUZZ_SANITIZERS} ${LAZYAGENT_FUZZ_FLAGS})
target_link_libraries(lazyagent_fuzz_core PUBLIC CURL::libcurl nlohmann_json::nlohmann_json
  yaml-cpp OpenSSL::Crypto pugixml::static pthread)

add_custom_target(fuzzers)
file(GLOB FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/*_fuzzer.cpp)
foreach(source ${FUZZ_SOURCES})
  get_filename_component(target ${source} NAME_WE)   # patch_contract_fuzzer
  string(REGEX REPLACE "_fuzzer$" "" name ${target})  # patch_contract
  add_executable(${target} ${source})
  target_compile_options(${target} PRIVATE
    -fsanitize=fuzzer,${LAZYAGENT_FUZZ_SANITIZERS} ${LAZYAGENT_FUZZ_FLAGS} -Wall -Wextra)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer,${LAZYAGENT_FUZZ_SANITIZERS})
  target_link_libraries(${target} PRIVATE lazyagent_fuzz_core)
  add_dependencies(fuzzers ${target})
  # Replay of the seed corpus alone (-runs=0 runs every seed once, no
  # mutation): quick, and fails if a seed crashes or breaks an invariant.
  # scripts/fuzz.sh does the bounded fuzzing itself.
  add_test(NAME "fuzz: ${name} seeds"
           COMMAND ${target} -runs=0 ${CMAKE_SOURCE_DIR}/fuzz/corpus/${name})
  set_tests_properties("fuzz: ${name} seeds" PROPERTIES LABELS fuzz)
endforeach()
