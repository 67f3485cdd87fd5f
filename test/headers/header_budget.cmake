# SPDX-License-Identifier: MIT
# cmake -DCXX=g++ -DINCLUDE_DIRS=a;b -DHEADER_DIR=.../netio -DBUDGET=6 [-DWORK_DIR=dir] -P header_budget.cmake
# For each user-facing header HEADER_DIR/*.hpp (what application code includes; not the
# back-end interface in HEADER_DIR/backend/), asks the preprocessor which headers it pulls in
# (g++ -H -E) and fails when it pulls in more than BUDGET other netio headers, or any of the
# back-end interface. Prints every header's count.
if(NOT WORK_DIR)
  set(WORK_DIR ${CMAKE_CURRENT_BINARY_DIR})  # -P: the working directory
endif()
file(GLOB headers RELATIVE ${HEADER_DIR} ${HEADER_DIR}/*.hpp)
set(flags "")
foreach(dir IN LISTS INCLUDE_DIRS)
  list(APPEND flags "-I${dir}")
endforeach()
set(failures "")
foreach(header IN LISTS headers)
  set(source "${WORK_DIR}/header_budget_tu.cpp")
  file(WRITE ${source} "#include <netio/${header}>\n")
  # Preprocessing is enough (-E): what is opened, not whether it compiles (netio_header_check).
  execute_process(COMMAND ${CXX} -std=c++20 -H -E ${flags} ${source}
                  RESULT_VARIABLE rc ERROR_VARIABLE trace OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    list(APPEND failures "netio/${header} does not preprocess alone")
    continue()
  endif()
  # -H prints one line per header opened: dots for the depth, then the path.
  string(REGEX MATCHALL "[^\n]*/netio/[a-z_/]+\\.hpp" lines "${trace}")
  set(pulled "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^.*/include/" "" name "${line}")
    if(NOT name STREQUAL "netio/${header}")
      list(APPEND pulled ${name})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES pulled)
  list(LENGTH pulled count)
  string(REPLACE ";" " " listed "${pulled}")
  message(STATUS "netio/${header}: ${count} ${listed}")
  if(count GREATER BUDGET)
    list(APPEND failures "netio/${header} pulls in ${count} netio headers, more than ${BUDGET}: ${listed}")
  endif()
  foreach(name IN LISTS pulled)
    if(name MATCHES "^netio/backend/")
      list(APPEND failures "netio/${header} pulls in the back-end interface: ${name}")
    endif()
  endforeach()
endforeach()
if(failures)
  string(REPLACE ";" "\n  " failures "${failures}")
  message(FATAL_ERROR "user-facing headers over their budget:\n  ${failures}")
endif()
