# Run after a GoogleTest executable is built (tests/CMakeLists.txt, cubby_unit_test's PER_SUITE):
# writes OUT, a CTest file with one test per GoogleTest suite of EXE, named NAME.Suite, that runs
# `EXE --gtest_filter=Suite.*:-*.Child*` (one process for the suite's tests, so what the suite
# shares, a server or a compiled program, is made once). Tests named Child* are the child half of
# multi-process tests: the parent runs them. Arguments (-D): EXE, NAME, OUT, LABELS, TIMEOUT.
execute_process(COMMAND "${EXE}" --gtest_list_tests "--gtest_filter=-*.Child*"
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${status}): ${errors}")
endif()

set(content "")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # A suite line: "Suite." or "Prefix/Suite/0.  # TypeParam = int"; test lines are indented.
  if(line MATCHES "^([^ #][^ ]*)\\.( |$)")
    set(suite "${CMAKE_MATCH_1}")
    set(test "${NAME}.${suite}")
    string(APPEND content
      "add_test([==[${test}]==] [==[${EXE}]==] [==[--gtest_filter=${suite}.*:-*.Child*]==])\n"
      "set_tests_properties([==[${test}]==] PROPERTIES LABELS [==[${LABELS}]==] "
      "TIMEOUT ${TIMEOUT})\n")
  endif()
endforeach()
if(content STREQUAL "")
  message(FATAL_ERROR "${EXE} lists no GoogleTest suite")
endif()
file(WRITE "${OUT}" "${content}")
