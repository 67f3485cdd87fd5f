# SPDX-License-Identifier: MIT
# Finds ns-3 (Debian 12's libns3-dev, 3.37) for scheduler/simulation/fabric: sets NS3_FOUND,
# NS3_INCLUDE_DIR and NS3_LIBRARIES (the modules the fat-tree uses).
# Not through ns-3's own CMake package (find_package(ns3)) nor its pkg-config modules: both
# link ns3-core against /usr/lib/x86_64-linux-gnu/libgsl.so, which only libgsl-dev installs
# (libns3-dev does not depend on it), so a link through them fails for want of a file that is
# not needed (libns3-core.so already names libgsl.so.27). The libraries carry their own
# dependencies; the headers are in <prefix>/include/ns3.
find_path(NS3_INCLUDE_DIR ns3/point-to-point-module.h)
set(NS3_LIBRARIES "")
set(NS3_FOUND FALSE)
if(NS3_INCLUDE_DIR)
  set(NS3_FOUND TRUE)
  foreach(module internet point-to-point traffic-control network core)
    find_library(NS3_${module}_LIBRARY NAMES ns3-${module} ns3.37-${module} ns3-${module}-default)
    if(NS3_${module}_LIBRARY)
      list(APPEND NS3_LIBRARIES ${NS3_${module}_LIBRARY})
    else()
      set(NS3_FOUND FALSE)
    endif()
  endforeach()
endif()
