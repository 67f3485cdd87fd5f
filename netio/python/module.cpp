// SPDX-License-Identifier: MIT
// The extension module netio._netio, which the package netio (netio/python/netio/) re-exports.
#include "bindings.hpp"

#include "netio/version.hpp"

#include <string>

PYBIND11_MODULE(_netio, m) {
  namespace np = netio::python;
  m.doc() = "netio's sockets, publish/subscribe and scheduled push for Python (docs/guide/python.md)";
  np::bind_errors(m);
  np::bind_buffers(m);
  np::bind_core(m);
  np::bind_sockets(m);
  np::bind_pubsub(m);
  np::bind_timeslices(m);
  m.attr("__version__") = std::string(netio::version());
}
