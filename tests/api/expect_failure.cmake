# attn_api_listing must fail loudly: on a header it cannot parse (HEADER, with EXPECT in its
# message), or, given FIXTURE, when the expected listing differs from the headers (naming the
# first differing line and the command that regenerates the file).
#
#   cmake -DPROGRAM=... -DHEADER=bad.hpp -DEXPECT=message -P expect_failure.cmake
#   cmake -DPROGRAM=... -DFIXTURE=dir -DWORK_DIR=dir -P expect_failure.cmake
if(DEFINED HEADER)
  execute_process(COMMAND ${PROGRAM} ${HEADER} RESULT_VARIABLE status OUTPUT_VARIABLE listed ERROR_VARIABLE message)
  if(status EQUAL 0)
    message(FATAL_ERROR "attn_api_listing accepted ${HEADER}, which it cannot parse; it wrote:\n${listed}")
  endif()
  if(NOT listed STREQUAL "")
    message(FATAL_ERROR "attn_api_listing failed on ${HEADER} but wrote a listing anyway:\n${listed}")
  endif()
  string(FIND "${message}" "${EXPECT}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "attn_api_listing failed on ${HEADER} with \"${message}\", not with \"${EXPECT}\"")
  endif()
  return()
endif()

# One heading changed: the check must name that line.
file(READ ${FIXTURE}/widget.md expected)
set(heading "### `Options` (struct)")
string(FIND "${expected}" "${heading}" offset)
if(offset EQUAL -1)
  message(FATAL_ERROR "${FIXTURE}/widget.md has no line \"${heading}\"")
endif()
string(SUBSTRING "${expected}" 0 ${offset} before)
string(REGEX MATCHALL "\n" newlines "${before}")
list(LENGTH newlines line)
math(EXPR line "${line} + 1")
string(REPLACE "${heading}" "### `Options` (class)" changed "${expected}")
set(changed_file ${WORK_DIR}/widget_changed.md)
file(WRITE ${changed_file} "${changed}")
execute_process(COMMAND ${PROGRAM} --check ${changed_file} ${FIXTURE} RESULT_VARIABLE status ERROR_VARIABLE message)
if(status EQUAL 0)
  message(FATAL_ERROR "attn_api_listing --check accepted ${changed_file}, which differs from the listing")
endif()
foreach(part IN ITEMS "${changed_file}:${line}: differs" "### `Options` (class)" "### `Options` (struct)"
                      "Regenerate it with: ${PROGRAM} ${FIXTURE} ${changed_file}")
  string(FIND "${message}" "${part}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "attn_api_listing --check's message does not say \"${part}\":\n${message}")
  endif()
endforeach()
