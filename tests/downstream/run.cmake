# cmake -D ATTN_BUILD_DIR=… -D WORK_DIR=… -D PROJECT_DIR=… -D CXX_COMPILER=… -P run.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(${CMAKE_COMMAND} --install "${ATTN_BUILD_DIR}" --prefix "${prefix}")
step(${CMAKE_COMMAND} -S "${PROJECT_DIR}" -B "${WORK_DIR}/build" -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
step("${WORK_DIR}/build/downstream")
if(NOT step_output MATCHES "downstream: attn [0-9.]+ ok")
  message(FATAL_ERROR "unexpected output: ${step_output}")
endif()
message(STATUS "${step_output}")
