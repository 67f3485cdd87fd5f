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

#include <fmt/format.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace netio::python {

template <typename Socket>
class HeldSocket {
 public:
  /// Makes Socket(context, args...) with the GIL released; ClosedError when the context is closed.
  template <typename... Args>
  HeldSocket(py::object context, std::string what, Args&&... args)
      : context_(std::move(context)), what_(std::move(what)) {
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

/// A timeout for an error message: "0.500 s".
inline std::string timeout_text(Timeout timeout) {
  return timeout ? fmt::format("{:.3f} s", std::chrono::duration<double>(*timeout).count()) : "ever";
}

/// receive(socket, slice) (a recv() of the socket) in slices until it gives an item, for up to
/// `timeout` (wait_in_slices): the item, or std::nullopt on timeout.
template <typename Held, typename Receive>
auto receive_in_slices(Held& held, Timeout timeout, Receive receive) {
  decltype(receive(*held.pin(), nanoseconds::zero())) item;
  wait_in_slices(timeout, [&](nanoseconds slice) {
    item = receive(*held.pin(), slice);
    return item.has_value();
  });
  return item;
}

/// __next__ of a socket iterated in a for loop: next(), and StopIteration once the socket is
/// closed (from another thread, say).
template <typename Next>
auto next_or_stop(Next next) {
  try {
    return next();
  } catch (const netio::Error& error) {
    if (error.code() == make_error_code(netio::Errc::closed)) throw py::stop_iteration();
    throw;
  }
}

/// The small messages of a recv_batch(), joined into one buffer without the GIL (views into
/// the pages would cost more than the copy of a small message), made into bytes objects with it.
class JoinedBatch {
 public:
  void add(std::span<const std::byte> message) {
    joined_.insert(joined_.end(), message.begin(), message.end());
    ends_.push_back(joined_.size());
  }
  std::size_t size() const noexcept { return ends_.size(); }
  /// Message i as a new reference to a bytes object.
  PyObject* bytes(std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    PyObject* object = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(joined_.data() + begin),
                                                 static_cast<Py_ssize_t>(ends_[i] - begin));
    if (!object) throw py::error_already_set();
    return object;
  }

 private:
  std::vector<std::byte> joined_;
  std::vector<std::size_t> ends_;
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
