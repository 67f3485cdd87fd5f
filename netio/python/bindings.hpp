// SPDX-License-Identifier: MIT
/// @file
/// What the files of the Python module (netio/python/) share: the rules for the GIL, waits
/// that Ctrl-C can interrupt, Python callables called from the event-loop thread, and bytes
/// netio lends to Python without a copy.
///
/// The GIL rule that keeps the module free of deadlocks: the event-loop thread takes the GIL to
/// call Python (handlers, callbacks), so no thread may hold the GIL while it waits for the
/// loop. Every call into netio that may wait (constructors, destructors, sends, closes,
/// receives) runs with the GIL released; only cheap observers (stats, endpoints) keep it.
#pragma once

#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/message.hpp"
#include "netio/stats.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace netio::python {

namespace py = pybind11;
using std::chrono::nanoseconds;
/// A timeout from Python: None waits without end.
using Timeout = std::optional<nanoseconds>;

}  // namespace netio::python

/// Durations from Python: seconds as an int or a float, or a datetime.timedelta; to Python:
/// float seconds. (pybind11's own caster takes no int.)
template <>
struct pybind11::detail::type_caster<std::chrono::nanoseconds> {
  PYBIND11_TYPE_CASTER(std::chrono::nanoseconds, const_name("float"));
  bool load(handle source, bool) {
    double seconds = 0;
    if (PyFloat_Check(source.ptr()) || PyLong_Check(source.ptr())) {
      seconds = PyFloat_AsDouble(source.ptr());
    } else if (hasattr(source, "total_seconds")) {
      seconds = source.attr("total_seconds")().cast<double>();
    } else {
      return false;
    }
    if (PyErr_Occurred() || seconds != seconds) {
      PyErr_Clear();
      return false;
    }
    seconds = std::clamp(seconds, -9.0e9, 9.0e9);  // ±285 years: within nanoseconds' range
    value = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
    return true;
  }
  static handle cast(std::chrono::nanoseconds duration, return_value_policy, handle) {
    return PyFloat_FromDouble(std::chrono::duration<double>(duration).count());
  }
};

namespace netio::python {

/// How long a blocking call waits at a time before it looks for a signal (Ctrl-C) and goes on.
inline constexpr auto signal_check_interval = std::chrono::milliseconds(50);

/// Waits up to `timeout` (None: without end) with the GIL released, calling attempt(slice)
/// with slices of at most signal_check_interval until it returns true; between slices it
/// takes the GIL and raises what a signal handler raised (KeyboardInterrupt). Returns
/// whether attempt succeeded. Called with the GIL held.
template <typename Attempt>
bool wait_in_slices(Timeout timeout, Attempt&& attempt) {
  using clock = std::chrono::steady_clock;
  const auto deadline = timeout ? clock::now() + *timeout : clock::time_point::max();
  for (;;) {
    nanoseconds slice = signal_check_interval;
    if (timeout) slice = std::clamp<nanoseconds>(deadline - clock::now(), nanoseconds::zero(), slice);
    bool done = false;
    {
      py::gil_scoped_release release;
      done = attempt(slice);
    }
    if (done) return true;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (timeout && clock::now() >= deadline) return false;
  }
}

/// A Python callable that C++ code holds and may drop on any thread: it is dropped under the
/// GIL. Empty for None.
using SharedCallable = std::shared_ptr<const py::object>;
SharedCallable share_callable(const py::object& callable);

/// Calls `callable` from the event-loop thread with the GIL taken; what it raises is
/// reported through sys.unraisablehook (the loop goes on), as netio logs a C++ handler's
/// exception. Does nothing while the interpreter shuts down.
template <typename... Args>
void call_from_loop(const SharedCallable& callable, const char* where, Args&&... args);

/// Calls `callable` from the event-loop thread with a view of `bytes` valid during the call
/// (call_view): call(callable, view) passes it with the handler's other arguments.
template <typename Call>
void call_from_loop_with_view(const SharedCallable& callable, const char* where, std::span<const std::byte> bytes,
                              Call&& call);

/// Bytes netio lends to Python (a received message in its page, a time-slice's contribution),
/// exported through the buffer protocol (Python class netio.LentBuffer, read-only) without a
/// copy while `owner` keeps them. release() drops the owner; it refuses while memoryviews
/// still use the bytes, and memoryview() of it raises netio.ClosedError afterwards.
struct Lent {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;
  Py_ssize_t exports = 0;
  bool released = false;
  std::string what;  ///< names the bytes in errors: "the message", "contribution 2 of time-slice 7"

  /// Throws BufferError while memoryviews use the bytes.
  void release();
};

/// The methods of a class whose received bytes are a LentBuffer in its member `lent`
/// (netio.Message, netio.Publication): data (a memoryview), released, tobytes(), bytes(),
/// len(), release() and the context-manager methods that release.
template <typename Class>
Class& def_lent_bytes(Class& cls);

/// A LentBuffer holding `lent`, and a memoryview of it.
py::object make_lent(Lent lent);
py::object memoryview_of(const py::object& lent_buffer);
/// A memoryview for a handler's call only, over bytes netio keeps: after the call,
/// end_call_view() releases it; a view the handler kept (or sliced) is then invalid, and
/// using it raises ValueError (a released memoryview); one kept through a slice or an
/// export is warned about (RuntimeWarning), its bytes no longer valid.
py::object call_view(std::span<const std::byte> bytes, const char* what);
void end_call_view(const py::object& view);

/// Python's bytes-like argument (bytes, bytearray, memoryview, numpy arrays: anything with
/// the buffer protocol, C-contiguous), as bytes without a copy; holds the buffer while it lives.
class InputBytes {
 public:
  explicit InputBytes(const py::handle& object);
  std::span<const std::byte> span() const noexcept { return span_; }

 private:
  py::buffer_info info_;
  std::span<const std::byte> span_;
};

/// Sets the Python error for `error` (errors.cpp: netio.Error, or its subclass TimeoutError
/// or ClosedError by the code), for C slots that return -1 instead of throwing.
void set_python_error(const netio::Error& error);
/// The netio.Error instance for `error` (for callbacks that are given one).
py::object make_python_error(const netio::Error& error);
/// Raises netio.TimeoutError (Errc::timeout) with `what`.
[[noreturn]] void throw_timeout(const std::string& what);

/// The user's netio::Context behind netio.Context (core.cpp). Sockets keep the Python object
/// alive, so that the C++ Context goes last; close() stops it (sockets still alive then
/// raise ClosedError), as does the end of the interpreter (atexit, before threads stop).
class PyContext {
 public:
  explicit PyContext(ContextOptions options);
  ~PyContext();
  PyContext(const PyContext&) = delete;
  PyContext& operator=(const PyContext&) = delete;
  /// The context; ClosedError after close().
  netio::Context& get();
  void close();
  bool closed() const noexcept { return closed_; }
  /// Closes every open context (netio's atexit hook).
  static void close_all();

 private:
  std::unique_ptr<netio::Context> context_;
  bool closed_ = false;
};

/// A received message for Python (netio.Message): its bytes lent (data), its peer.
struct PyMessage {
  py::object lent;  ///< a LentBuffer
  netio::Peer peer;
};
py::object make_message(netio::Message message);

/// A socket's statistics (netio::SocketStats) as attributes.
py::object socket_stats(const SocketStats& stats);

/// types.SimpleNamespace(**fields): the statistics structs as attribute bags.
py::object attribute_bag(const py::dict& fields);

void bind_errors(py::module_& m);
void bind_buffers(py::module_& m);
void bind_core(py::module_& m);
void bind_sockets(py::module_& m);
void bind_pubsub(py::module_& m);
void bind_timeslices(py::module_& m);

// --- implementation of the templates ---

bool interpreter_finalizing() noexcept;

template <typename... Args>
void call_from_loop(const SharedCallable& callable, const char* where, Args&&... args) {
  if (!callable || interpreter_finalizing()) return;
  py::gil_scoped_acquire gil;
  try {
    (*callable)(std::forward<Args>(args)...);
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable(where);
  }
}

template <typename Class>
Class& def_lent_bytes(Class& cls) {
  using Holder = typename Class::type;
  auto lent_of = [](const Holder& holder) -> Lent& { return holder.lent.template cast<Lent&>(); };
  auto copy = [](const Holder& holder) { return py::bytes(memoryview_of(holder.lent).attr("tobytes")()); };
  cls.def_property_readonly(
         "data", [](const Holder& holder) { return memoryview_of(holder.lent); },
         "A read-only memoryview over netio's page (no copy), valid until release().")
      .def_property_readonly("released", [lent_of](const Holder& holder) { return lent_of(holder).released; })
      .def("tobytes", copy, "A copy of the bytes.")
      .def("__bytes__", copy)
      .def("__len__", [lent_of](const Holder& holder) { return lent_of(holder).bytes.size(); })
      .def(
          "release", [lent_of](const Holder& holder) { lent_of(holder).release(); },
          "Gives the page back now; BufferError while memoryviews of it are alive.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [lent_of](const Holder& holder, const py::args&) { lent_of(holder).release(); });
  return cls;
}

template <typename Call>
void call_from_loop_with_view(const SharedCallable& callable, const char* where, std::span<const std::byte> bytes,
                              Call&& call) {
  if (!callable || interpreter_finalizing()) return;
  py::gil_scoped_acquire gil;
  const py::object view = call_view(bytes, where);
  try {
    call(*callable, view);
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable(where);
  }
  end_call_view(view);
}

}  // namespace netio::python
