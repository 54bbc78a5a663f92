# Runs a program and checks its exit status and, optionally, its output; for ctest.
#
#   cmake -DPROGRAM=<path> [-DARGS="<arguments, space-separated>"]
#         [-DEXPECTED_EXIT=<status, default 0>] [-DINPUT_FILE=<file given as standard input>]
#         [-DEXPECTED_STDOUT=<file: stdout must equal it byte for byte>]
#         [-DSTDOUT_REGEX=<regex stdout must match>] [-DSTDERR_REGEX=<regex stderr must match>]
#         [-DACTUAL_STDOUT=<file to save stdout in, for diffing>]
#         -P CompareOutput.cmake
if(NOT DEFINED PROGRAM)
  message(FATAL_ERROR "CompareOutput: PROGRAM is not set")
endif()
if(NOT DEFINED EXPECTED_EXIT)
  set(EXPECTED_EXIT 0)
endif()
separate_arguments(arguments UNIX_COMMAND "${ARGS}")

set(input)
if(DEFINED INPUT_FILE)
  set(input INPUT_FILE "${INPUT_FILE}")
endif()
execute_process(COMMAND "${PROGRAM}" ${arguments} ${input}
  RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
if(DEFINED ACTUAL_STDOUT)
  file(WRITE "${ACTUAL_STDOUT}" "${stdout}")
endif()

set(failed FALSE)
if(NOT status STREQUAL EXPECTED_EXIT)
  message(SEND_ERROR "${PROGRAM} ${ARGS}: exit status ${status}, expected ${EXPECTED_EXIT}\nstderr:\n${stderr}")
  set(failed TRUE)
endif()
if(DEFINED EXPECTED_STDOUT)
  file(READ "${EXPECTED_STDOUT}" expected)
  if(NOT stdout STREQUAL expected)
    message(SEND_ERROR "${PROGRAM} ${ARGS}: stdout differs from ${EXPECTED_STDOUT}\n"
      "--- expected\n${expected}--- actual\n${stdout}---")
    set(failed TRUE)
  endif()
endif()
if(DEFINED STDOUT_REGEX AND NOT stdout MATCHES "${STDOUT_REGEX}")
  message(SEND_ERROR "${PROGRAM} ${ARGS}: stdout does not match '${STDOUT_REGEX}':\n${stdout}")
  set(failed TRUE)
endif()
if(DEFINED STDERR_REGEX AND NOT stderr MATCHES "${STDERR_REGEX}")
  message(SEND_ERROR "${PROGRAM} ${ARGS}: stderr does not match '${STDERR_REGEX}':\n${stderr}")
  set(failed TRUE)
endif()
if(failed)
  message(FATAL_ERROR "CompareOutput: failed")
endif()
