# ctest fixture: installs the reference encoders pinned by package.json and package-lock.json
# into the build tree with `npm ci`. Without npm or the registry it prints a line that the
# test's SKIP_REGULAR_EXPRESSION turns into "not run" with the reason.
#   cmake -DSOURCE=<this directory> -DDESTINATION=<build directory> -P install.cmake
find_program(NPM npm)
if(NOT NPM)
  message("ATTN_REFERENCE_SKIPPED: npm is not installed (apt-get install nodejs npm)")
  return()
endif()
file(MAKE_DIRECTORY ${DESTINATION})
file(COPY ${SOURCE}/package.json ${SOURCE}/package-lock.json DESTINATION ${DESTINATION})
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --ignore-scripts
  WORKING_DIRECTORY ${DESTINATION} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output
  TIMEOUT 600)
if(NOT result EQUAL 0)
  file(REMOVE_RECURSE ${DESTINATION}/node_modules)
  message("ATTN_REFERENCE_SKIPPED: npm ci failed (is the npm registry reachable?): ${result}\n${output}")
  return()
endif()
message("installed the reference encoders into ${DESTINATION}/node_modules")
