// SPDX-License-Identifier: MIT
/// @file
/// How the Python module holds a netio socket: made and destroyed with the GIL released,
/// keeping its netio.Context's Python object alive, closed by close() (or when Python drops
/// it), and pinned by each call so that a close() on one thread while another waits in it
/// ends that wait within a slice (bindings.hpp: wait_in_slices) instead of freeing the socket
/// under it.
#pragma once

#include "bindings.hpp"

#include "netio/error.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace netio::python {

template <typename Socket>
class HeldSocket {
 public:
  /// Makes Socket(context, args...) with the GIL released; ClosedError when the context is closed.
  template <typename... Args>
  HeldSocket(py::object context, std::string what, Args&&... args) : context_(std::move(context)), what_(std::move(what)) {
    netio::Context& netio_context = context_.cast<PyContext&>().get();
    py::gil_scoped_release unlocked;
    socket_ = std::make_shared<Socket>(netio_context, std::forward<Args>(args)...);
  }
  ~HeldSocket() { close(); }
  HeldSocket(const HeldSocket&) = delete;
  HeldSocket& operator=(const HeldSocket&) = delete;

  /// The socket, for one call; ClosedError after close(). Any thread, GIL or not.
  std::shared_ptr<Socket> pin() const {
    std::lock_guard lock(mutex_);
    if (!socket_) throw netio::Error(netio::Errc::closed, what_ + " was closed");
    return socket_;
  }
  /// f(socket) with the GIL released (f returns no Python object).
  template <typename F>
  decltype(auto) unlocked(F&& f) {
    py::gil_scoped_release unlocked;
    const auto socket = pin();
    return f(*socket);
  }
  /// Destroys the socket (as its C++ destructor does: a send socket sends what is queued
  /// first), with the GIL released; later calls raise ClosedError. Idempotent.
  void close() {
    std::shared_ptr<Socket> last;
    {
      std::lock_guard lock(mutex_);
      last = std::move(socket_);
    }
    if (!last) return;
    py::gil_scoped_release unlocked;
    last.reset();
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return socket_ == nullptr;
  }
  const std::string& what() const noexcept { return what_; }

 private:
  py::object context_;  ///< netio.Context: outlives the socket (declared first, destroyed last)
  std::string what_;    ///< "the high-throughput receive socket at tcp://…", for errors
  mutable std::mutex mutex_;
  std::shared_ptr<Socket> socket_;
};

/// close(), closed and the context-manager methods of a socket class.
template <typename Class>
Class& def_close(Class& cls) {
  using Held = typename Class::type;
  cls.def("close", &Held::close, "Closes the socket (a send socket sends what is queued first); idempotent.")
      .def_property_readonly("closed", &Held::closed)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Held& held, const py::args&) { held.close(); });
  return cls;
}

}  // namespace netio::python
