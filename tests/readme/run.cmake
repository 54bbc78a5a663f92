# cmake -D ATTN_BUILD_DIR=… -D SOURCE_DIR=… -D WORK_DIR=… -D EXTRACT=… -D CXX_COMPILER=… -P run.cmake
# Installs attn into a scratch prefix, builds every C++ snippet of README.md against it as a package
# user would, and runs each from the source directory (where models/ is).
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/project")
set(prefix "${WORK_DIR}/prefix")

function(step)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE result OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${ARGN}\n${out}")
endfunction()

step(${CMAKE_COMMAND} --install "${ATTN_BUILD_DIR}" --prefix "${prefix}")
step("${EXTRACT}" "${SOURCE_DIR}/README.md" "${WORK_DIR}/project")
# Unoptimised (-O0): what is checked is that each snippet compiles warning-free against the package
# and runs as written, on the small store model. The library's code is built optimised, with the
# same warnings as errors, by the tests and examples; here the optimiser would only add time (the five
# snippets took 4.4 minutes in Release in a whole `.ci/run` on a 2-vCPU Xeon, the last test of its ctest to end).
step(${CMAKE_COMMAND} -S "${WORK_DIR}/project" -B "${WORK_DIR}/build" -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=
     "-DCMAKE_CXX_FLAGS=-O0 -Wall -Wextra -Wpedantic -Werror")
step(${CMAKE_COMMAND} --build "${WORK_DIR}/build" -j2)
file(STRINGS "${WORK_DIR}/project/runs.txt" runs)
foreach(run IN LISTS runs)
  separate_arguments(command UNIX_COMMAND "${run}")
  list(POP_FRONT command program)
  step("${WORK_DIR}/build/${program}" ${command})
endforeach()
