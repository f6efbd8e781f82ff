# vigil_layer(NAME DEPS <targets...>)
#
# One static library per layer from the layer folder's *.cc files, plus:
#   *_test.cc   -> <name>_test   (fast unit tier, ctest label "unit")
#   *_itest.cc  -> <name>_itest  (integration tier: crash, fault, servers; label "integration")
#   *_fuzz.cc   -> one fuzz target each (libFuzzer with clang, else a corpus/random driver;
#                  label "fuzz")
# Files ending in _main.cc or _bench.cc are left to the layer's own CMakeLists.
# Test sources compile with VIGIL_TEST_CXX_FLAGS appended (the code under test keeps the
# build type's flags): assertion-heavy test files cost a third less to compile at -O1.
function(vigil_test_options target)
  if(VIGIL_TEST_CXX_FLAGS)
    separate_arguments(_flags UNIX_COMMAND "${VIGIL_TEST_CXX_FLAGS}")
    target_compile_options(${target} PRIVATE ${_flags})
  endif()
  if(VIGIL_UNITY_BUILD)
    # A target whose test files define the same helper names opts out with
    # set_target_properties(<target> PROPERTIES UNITY_BUILD OFF) after its definition.
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${VIGIL_UNITY_BATCH_SIZE})
    # GCC uses a precompiled header only with the same predefined macros: every test target
    # compiles with OpenMP (_OPENMP), as most already do through vigil_index.
    target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
    target_precompile_headers(${target} REUSE_FROM vigil_test_pch)
  endif()
endfunction()

# The precompiled headers of test targets (VIGIL_UNITY_BUILD): compiled once with the test
# flags by this object library, reused by every test target.
function(vigil_test_pch_target)
  if(NOT VIGIL_UNITY_BUILD OR NOT VIGIL_BUILD_TESTS)
    return()
  endif()
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/vigil_test_pch.cc CONTENT "// Compiles the precompiled test headers.\n")
  find_package(OpenMP REQUIRED)
  add_library(vigil_test_pch OBJECT ${CMAKE_BINARY_DIR}/vigil_test_pch.cc)
  target_link_libraries(vigil_test_pch PRIVATE GTest::gtest GTest::gmock nlohmann_json::nlohmann_json
                        OpenMP::OpenMP_CXX)
  target_precompile_headers(vigil_test_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h> <nlohmann/json.hpp>
    <algorithm> <atomic> <chrono> <cstdint> <cstdio> <cstdlib> <cstring> <filesystem> <fstream>
    <functional> <map> <memory> <mutex> <optional> <set> <sstream> <string> <thread> <utility>
    <vector>)
  if(VIGIL_TEST_CXX_FLAGS)
    separate_arguments(_flags UNIX_COMMAND "${VIGIL_TEST_CXX_FLAGS}")
    target_compile_options(vigil_test_pch PRIVATE ${_flags})
  endif()
endfunction()
vigil_test_pch_target()

# Batches the sources of a library or program into unity translation units (VIGIL_UNITY_BUILD):
# the heavy headers (nlohmann/json, Boost.Beast, FAISS, toml++) are parsed and their templates
# instantiated once per batch instead of once per file.
function(vigil_unity_sources target)
  if(VIGIL_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${VIGIL_UNITY_BATCH_SIZE})
  endif()
endfunction()

function(vigil_layer name)
  # UNITY_ALONE: sources that define a file-local name another source of the layer also
  # defines, compiled on their own in unity builds.
  cmake_parse_arguments(L "" "" "DEPS;TEST_DEPS;ITEST_PROPERTIES;UNITY_ALONE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_(test|itest|fuzz|bench|main)\\.cc$")
  add_library(vigil_${name} STATIC ${srcs})
  target_include_directories(vigil_${name}
    PUBLIC ${PROJECT_SOURCE_DIR}/include
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(vigil_${name} PUBLIC ${L_DEPS})
  vigil_unity_sources(vigil_${name})
  if(L_UNITY_ALONE)
    set_source_files_properties(${L_UNITY_ALONE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()

  file(GLOB fuzzers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_fuzz.cc)
  foreach(f ${fuzzers})
    get_filename_component(fname ${f} NAME_WE)
    add_executable(${fname} ${f})
    target_include_directories(${fname} PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${fname} PRIVATE vigil_${name} ${L_TEST_DEPS})
    if(VIGIL_LIBFUZZER)
      target_compile_options(${fname} PRIVATE -fsanitize=fuzzer)
      target_link_options(${fname} PRIVATE -fsanitize=fuzzer)
    else()
      # Without libFuzzer the target replays deterministic random inputs and
      # mutations of its seed corpus, so every build exercises the decoder.
      target_link_libraries(${fname} PRIVATE vigil_fuzz_driver)
      add_dependencies(vigil_unit_tests ${fname})
      if(VIGIL_BUILD_TESTS)
        add_test(NAME ${fname}.replay COMMAND ${fname} --iterations=2000)
        set_tests_properties(${fname}.replay PROPERTIES LABELS "unit;fuzz" TIMEOUT ${VIGIL_UNIT_TIMEOUT})
      endif()
    endif()
  endforeach()
  if(NOT VIGIL_BUILD_TESTS)
    return()
  endif()
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(tests)
    add_executable(${name}_test ${tests})
    target_include_directories(${name}_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${name}_test PRIVATE vigil_${name} vigil_testutil ${L_TEST_DEPS}
                          GTest::gtest_main GTest::gmock rapidcheck)
    vigil_test_options(${name}_test)
    gtest_discover_tests(${name}_test PROPERTIES LABELS unit TIMEOUT ${VIGIL_UNIT_TIMEOUT} DISCOVERY_TIMEOUT 120)
    add_dependencies(vigil_unit_tests ${name}_test)
  endif()
  file(GLOB itests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_itest.cc)
  if(itests)
    add_executable(${name}_itest ${itests})
    target_include_directories(${name}_itest PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${name}_itest PRIVATE vigil_${name} vigil_testutil ${L_TEST_DEPS}
                          GTest::gtest_main GTest::gmock rapidcheck)
    vigil_test_options(${name}_itest)
    gtest_discover_tests(${name}_itest PROPERTIES LABELS integration TIMEOUT ${VIGIL_INTEGRATION_TIMEOUT}
                         ${L_ITEST_PROPERTIES}
                         DISCOVERY_TIMEOUT 120)
  endif()
endfunction()
