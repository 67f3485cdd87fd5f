# SPDX-License-Identifier: MIT
# What keeps a build short on 2 cores (docs/dev/ci.md): precompiled headers and batches. Parsing the
# standard headers and fmt takes about 2 s of CPU per source file, often more than half of
# its front end; each target with many sources parses them once instead.
option(NETIO_PRECOMPILE_HEADERS "Precompile the standard headers, fmt and Catch2 for netio's own libraries and tests" ON)

set(NETIO_PCH_HEADERS
  <algorithm> <array> <atomic> <chrono> <cmath> <condition_variable> <cstdint> <cstring>
  <deque> <functional> <map> <memory> <mutex> <optional> <set> <stdexcept> <string>
  <string_view> <system_error> <thread> <unordered_map> <utility> <variant> <vector>
  <fmt/format.h>)

# The test files, likewise, are compiled in batches (test/CMakeLists.txt), and so are the
# libraries' sources (netio_unity_groups below).
option(NETIO_UNITY_BUILD_TESTS "Compile the test files in batches, one compiler run each" ON)
option(NETIO_UNITY_BUILD "Compile the libraries' sources in batches, one compiler run each" ON)

# netio_unity_groups(target "name:file file ..." ...): compile each group's files, named relative
# to the current source directory, as one translation unit (UNITY_BUILD_MODE GROUP); a source in
# no group compiles on its own. The files of a group share their anonymous namespaces, static
# functions and file-scope using-directives: files whose helpers share a name (the scheduler's
# reject(), the tools' kTick, ...) are in different groups, and a source with compile
# definitions of its own (libfabric_library.cpp) is in none. A new source compiles on its own
# until it is added to a group.
function(netio_unity_groups target)
  if(NOT NETIO_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  foreach(group IN LISTS ARGN)
    string(REPLACE ":" ";" group "${group}")
    list(POP_FRONT group name)
    string(REPLACE " " ";" files "${group}")
    set_source_files_properties(${files} TARGET_DIRECTORY ${target} PROPERTIES UNITY_GROUP ${target}_${name})
  endforeach()
endfunction()

# netio_precompile_headers(target [header...]): the headers above and the ones given. A source
# with compile definitions or options of its own compiles without them: GCC refuses a
# precompiled header built with other macros, and -Winvalid-pch with -Werror fails the build.
function(netio_precompile_headers target)
  if(NOT NETIO_PRECOMPILE_HEADERS)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${NETIO_PCH_HEADERS} ${ARGN})
  get_target_property(sources ${target} SOURCES)
  get_target_property(directory ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${directory})
    foreach(property COMPILE_DEFINITIONS COMPILE_OPTIONS COMPILE_FLAGS)
      get_source_file_property(value ${source} TARGET_DIRECTORY ${target} ${property})
      if(value)
        set_source_files_properties(${source} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endforeach()
  endforeach()
endfunction()
