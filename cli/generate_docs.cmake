# Writes the output of `${CLI} --generate ${KIND}` to ${OUT} (cli/CMakeLists.txt runs it after
# building the tool): the man page and the bash completion come from the tool's command registry.
execute_process(COMMAND ${CLI} --generate ${KIND} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "`${CLI} --generate ${KIND}` failed (${status})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
