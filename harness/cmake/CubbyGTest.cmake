# cubby_add_gtest(<target>
#     [GPU_FILTER <gtest pattern>]  tests that need a GPU; they get the label "gpu"
#                                   (default "*Gpu*:*GPU*"; "" : none)
#     [LABELS <label>...]           labels of every test of <target> (besides "gpu")
#     [WARM_UP <gtest filter>]      a CTest fixture test "<target>.cubby_warm_up" that runs
#                                   <target> --gtest_filter=<filter> once before any test of
#                                   <target>, so that parallel tests find the store warm instead
#                                   of compiling the same programs side by side. Other targets
#                                   can require it (fixture name: cubby_warm_up_<target>).
#     [REQUIRES <fixture>...]       CTest fixtures every test needs (e.g. cubby_warm_up_<other>)
#     [REQUIRE_WARM]                run the tests with --cubby_require_warm: any compile fails
#                                   (with a fixture that warms the store first)
#     [EXCLUDE <gtest pattern>]     tests not registered with CTest
#     [TIMEOUT <seconds>]           per test (default 600)
#     [EXTRA_ARGS <arg>...]         passed to every run of <target>
#     [TEST_PREFIX <prefix>]
#     [DISCOVERY_MODE PRE_TEST|POST_BUILD])  default PRE_TEST
#
# Cold runs: every test runs in its own process, so a prefetch per test process would start and
# stop with each test. Instead a CTest fixture test "<target>.cubby_warm" runs
# `cubby warm --prefetch --suite <the binary's file name>` once before the tests of <target> (and
# its WARM_UP): after a header edit or a toolchain upgrade it compiles the recipes an earlier run
# recorded in parallel worker processes; it is best effort and never fails (nothing recorded, a
# read-only store: it does nothing). The tests themselves run with CUBBY_PREFETCH=0. It needs the
# cubby tool: the build's own (cubby's build, or a consumer's add_subdirectory / FetchContent of
# cubby with CUBBY_BUILD_CLI=ON; <target> then depends on it), else CUBBY_CLI_EXECUTABLE
# (searched beside the installed package, then on PATH); without it there is no such fixture.
#
# Registers the tests of a GoogleTest executable <target> with CTest through
# gtest_discover_tests(DISCOVERY_MODE PRE_TEST by default): the test list is read when ctest runs, so
# building never needs to run the binary (cross builds, machines without a GPU) and a new test is
# never missed. PRE_TEST makes ctest include GoogleTestAddTests.cmake of the CMake that
# configured the build: to build on one machine and run ctest on another with a different CMake,
# pass DISCOVERY_MODE POST_BUILD (the list is written when the binary is built, so the build
# machine must be able to run it) or use the same CMake version on both. Each test runs in its own process, so they share compiled kernels only through
# the cubby store (CUBBY_DIR): keep the store outside the build tree and pass it along.
include_guard(GLOBAL)

function(cubby_add_gtest target)
  # Here, not at file scope: gtest_discover_tests refers ctest to GoogleTestAddTests.cmake through
  # a variable GoogleTest.cmake sets in the including scope, and with cubby added by
  # add_subdirectory / FetchContent this file is included in cubby's folder, not the caller's.
  include(GoogleTest)
  cmake_parse_arguments(ARG "REQUIRE_WARM"
                        "GPU_FILTER;WARM_UP;EXCLUDE;TIMEOUT;TEST_PREFIX;DISCOVERY_MODE"
                        "LABELS;REQUIRES;EXTRA_ARGS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cubby_add_gtest(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "cubby_add_gtest(${target}): no such target; add_executable it first")
  endif()
  if(NOT DEFINED ARG_GPU_FILTER)
    set(ARG_GPU_FILTER "*Gpu*:*GPU*")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  if(NOT ARG_DISCOVERY_MODE)
    set(ARG_DISCOVERY_MODE PRE_TEST)
  elseif(NOT ARG_DISCOVERY_MODE MATCHES "^(PRE_TEST|POST_BUILD)$")
    message(FATAL_ERROR "cubby_add_gtest(${target}): DISCOVERY_MODE must be PRE_TEST or "
                        "POST_BUILD, not \"${ARG_DISCOVERY_MODE}\"")
  endif()
  set(extra_args ${ARG_EXTRA_ARGS})
  if(ARG_REQUIRE_WARM)
    list(APPEND extra_args --cubby_require_warm)
  endif()

  set(fixtures ${ARG_REQUIRES})
  get_property(cli_target GLOBAL PROPERTY CUBBY_CLI_TARGET)
  if(cli_target)
    set(cli "$<TARGET_FILE:${cli_target}>")
    add_dependencies(${target} ${cli_target})  # built with the tests that run it
  else()
    # CMAKE_CURRENT_FUNCTION_LIST_DIR: <prefix>/lib/cmake/cubby when installed.
    find_program(CUBBY_CLI_EXECUTABLE cubby HINTS "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../../bin"
                 DOC "the cubby tool (its cubby_warm fixtures warm the suites' recipes)")
    set(cli "${CUBBY_CLI_EXECUTABLE}")
  endif()
  if(cli)
    add_test(NAME ${ARG_TEST_PREFIX}${target}.cubby_warm
             COMMAND ${cli} warm --prefetch --suite $<TARGET_FILE_NAME:${target}>)
    set_tests_properties(${ARG_TEST_PREFIX}${target}.cubby_warm PROPERTIES
      FIXTURES_SETUP cubby_warm_${target} LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
    list(APPEND fixtures cubby_warm_${target})
  endif()
  if(DEFINED ARG_WARM_UP)
    add_test(NAME ${ARG_TEST_PREFIX}${target}.cubby_warm_up
             COMMAND ${target} --gtest_filter=${ARG_WARM_UP} --gtest_brief=1 ${ARG_EXTRA_ARGS})
    set_tests_properties(${ARG_TEST_PREFIX}${target}.cubby_warm_up PROPERTIES
      FIXTURES_SETUP cubby_warm_up_${target} LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "CUBBY_PREFETCH=0")
    if(fixtures)
      set_tests_properties(${ARG_TEST_PREFIX}${target}.cubby_warm_up PROPERTIES
        FIXTURES_REQUIRED "${fixtures}")
    endif()
    list(APPEND fixtures cubby_warm_up_${target})
  endif()

  # gtest filters: "POSITIVE[:POSITIVE...][-NEGATIVE[:NEGATIVE...]]".
  if(ARG_GPU_FILTER STREQUAL "")
    set(cpu_filter "*")
    if(ARG_EXCLUDE)
      set(cpu_filter "*-${ARG_EXCLUDE}")
    endif()
  else()
    set(cpu_filter "*-${ARG_GPU_FILTER}")
    set(gpu_filter "${ARG_GPU_FILTER}")
    if(ARG_EXCLUDE)
      string(APPEND cpu_filter ":${ARG_EXCLUDE}")
      set(gpu_filter "${ARG_GPU_FILTER}-${ARG_EXCLUDE}")
    endif()
  endif()

  # NO_PRETTY_VALUES: names of value-parameterized tests stay GoogleTest's own
  # (Suite/Test.Case/param_name), without the printed parameter.
  gtest_discover_tests(${target} DISCOVERY_MODE ${ARG_DISCOVERY_MODE} TEST_FILTER "${cpu_filter}"
    TEST_PREFIX "${ARG_TEST_PREFIX}" EXTRA_ARGS ${extra_args} NO_PRETTY_VALUES
    TEST_LIST ${target}_cubby_cpu_tests PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  if(NOT ARG_GPU_FILTER STREQUAL "")
    gtest_discover_tests(${target} DISCOVERY_MODE ${ARG_DISCOVERY_MODE} TEST_FILTER "${gpu_filter}"
      TEST_PREFIX "${ARG_TEST_PREFIX}" EXTRA_ARGS ${extra_args} NO_PRETTY_VALUES
      TEST_LIST ${target}_cubby_gpu_tests PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()

  # List-valued properties (several labels, several fixtures) do not survive
  # gtest_discover_tests(PROPERTIES): set them from a CTest include file that runs after the
  # discovered tests are added (the TEST_LIST variables are set by then).
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_cubby_properties.cmake")
  set(content "")
  foreach(kind cpu gpu)
    set(kind_labels ${ARG_LABELS})
    if(kind STREQUAL "gpu")
      if(ARG_GPU_FILTER STREQUAL "")
        continue()
      endif()
      list(APPEND kind_labels gpu)
    endif()
    set(tests "\${${target}_cubby_${kind}_tests}")
    string(APPEND content "if(NOT \"${tests}\" STREQUAL \"\")\n"
                          "  set_tests_properties(${tests} PROPERTIES ENVIRONMENT CUBBY_PREFETCH=0")
    if(kind_labels)
      string(APPEND content " LABELS \"${kind_labels}\"")
    endif()
    if(fixtures)
      string(APPEND content " FIXTURES_REQUIRED \"${fixtures}\"")
    endif()
    string(APPEND content ")\nendif()\n")
  endforeach()
  file(WRITE "${script}" "${content}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
