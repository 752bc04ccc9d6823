# Runs a command and passes only if it exits 0 AND its standard output
# matches a regular expression (ctest's PASS_REGULAR_EXPRESSION alone would
# ignore the exit status).
#   cmake -DCOMMAND="prog|arg|arg" -DEXPECT="regex" -P expect_output.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match: ${EXPECT}")
endif()
