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
# Found, not listed: from the targets' own #include "..." lines, every src/
# header whose .cpp exists is compiled, and that .cpp's includes are followed
# in turn. A hand-kept list went stale once (a file started calling a new one:
# CI's link failed), so there is none.
file(GLOB FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/*_fuzzer.cpp)
file(GLOB _fuzz_headers ${CMAKE_SOURCE_DIR}/fuzz/*.h)
set(_fuzz_todo ${FUZZ_SOURCES} ${_fuzz_headers})
set(_fuzz_seen "")
set(LAZYAGENT_FUZZ_LIB_SOURCES "")
while(_fuzz_todo)
  list(POP_FRONT _fuzz_todo _file)
  if(_file IN_LIST _fuzz_seen)
    continue()
  endif()
  list(APPEND _fuzz_seen ${_file})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_file})
  file(STRINGS ${_file} _includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
  foreach(_line ${_includes})
    string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" _name "${_line}")
    set(_header ${CMAKE_SOURCE_DIR}/src/${_name})
    if(NOT EXISTS ${_header})
      continue()  # a header of fuzz/ itself, or a system one
    endif()
    list(APPEND _fuzz_todo ${_header})
    string(REGEX REPLACE "\\.h$" ".cpp" _source ${_header})
    if(EXISTS ${_source} AND NOT _source IN_LIST LAZYAGENT_FUZZ_LIB_SOURCES)
      list(APPEND LAZYAGENT_FUZZ_LIB_SOURCES ${_source})
      list(APPEND _fuzz_todo ${_source})
    endif()
  endforeach()
endwhile()
list(LENGTH LAZYAGENT_FUZZ_LIB_SOURCES _count)
message(STATUS "fuzz: ${_count} library sources reached from the targets' includes")
add_library(lazyagent_fuzz_core STATIC ${LAZYAGENT_FUZZ_LIB_SOURCES})
target_include_directories(lazyagent_fuzz_core PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(lazyagent_fuzz_core PUBLIC LAZYAGENT_VERSION="${PROJECT_VERSION}")
target_compile_options(lazyagent_fuzz_core PRIVATE
  -fsanitize=fuzzer-no-link,${LAZYAGENT_FUZZ_SANITIZERS} ${LAZYAGENT_FUZZ_FLAGS})
target_link_libraries(lazyagent_fuzz_core PUBLIC CURL::libcurl nlohmann_json::nlohmann_json
  yaml-cpp OpenSSL::Crypto pugixml::static ${RE2_STATIC_LINK} pthread)

add_custom_target(fuzzers)
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
