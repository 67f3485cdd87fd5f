// SPDX-License-Identifier: MIT
// Bytes between netio and Python without copies: netio.LentBuffer exports netio's pages to
// memoryviews (counting them, so that a release under a live view is refused instead of
// leaving it dangling); InputBytes takes anything with the buffer protocol for a send.
#include "bindings.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

namespace netio::python {

namespace {

const std::byte empty_bytes[1] = {};

/// The buffer-protocol slots of LentBuffer: read-only, counted.
int lent_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  Lent* lent = nullptr;
  try {
    lent = &py::handle(self).cast<Lent&>();
  } catch (...) {
    PyErr_SetString(PyExc_TypeError, "netio.LentBuffer: not a LentBuffer");
    return -1;
  }
  if (lent->released) {
    set_python_error(netio::Error(netio::Errc::closed, fmt::format("{} was released: its bytes are gone (copy with "
                                                                   "bytes() what you keep)",
                                                                   lent->what)));
    return -1;
  }
  const std::byte* data = lent->bytes.empty() ? empty_bytes : lent->bytes.data();
  if (PyBuffer_FillInfo(view, self, const_cast<std::byte*>(data), static_cast<Py_ssize_t>(lent->bytes.size()),
                        /*readonly=*/1, flags) != 0)
    return -1;
  ++lent->exports;
  return 0;
}

void lent_releasebuffer(PyObject* self, Py_buffer*) {
  try {
    --py::handle(self).cast<Lent&>().exports;
  } catch (...) {
    PyErr_Clear();
  }
}

py::object memoryview_from_memory(std::span<const std::byte> bytes) {
  const std::byte* data = bytes.empty() ? empty_bytes : bytes.data();
  PyObject* view = PyMemoryView_FromMemory(reinterpret_cast<char*>(const_cast<std::byte*>(data)),
                                           static_cast<Py_ssize_t>(bytes.size()), PyBUF_READ);
  if (!view) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(view);
}

}  // namespace

void Lent::release() {
  if (released) return;
  if (exports > 0)
    throw py::buffer_error(
        fmt::format("{}: {} memoryview(s) still use its bytes; release them first (or copy with "
                    "bytes())",
                    what, exports));
  released = true;
  bytes = {};
  py::gil_scoped_release unlocked;  // a page's release may wake the loop
  owner.reset();
}

py::object make_lent(Lent lent) { return py::cast(std::move(lent)); }

py::object memoryview_of(const py::object& lent_buffer) {
  PyObject* view = PyMemoryView_FromObject(lent_buffer.ptr());
  if (!view) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(view);
}

py::object call_view(std::span<const std::byte> bytes, const char*) { return memoryview_from_memory(bytes); }

void end_call_view(const py::object& view) {
  // A memoryview made from memory counts what was derived from it (memoryview(view), numpy,
  // ...) as exports, and refuses release() while there are any.
  PyObject* result = PyObject_CallMethod(view.ptr(), "release", nullptr);
  if (result == nullptr) {
    PyErr_Clear();
    if (PyErr_WarnEx(PyExc_RuntimeWarning,
                     "netio: a view of a message was kept beyond the handler's call: its bytes are no longer "
                     "valid (copy with bytes() what you keep)",
                     1) != 0)
      PyErr_Clear();
  } else {
    Py_DECREF(result);
  }
}

InputBytes::InputBytes(const py::handle& object) {
  if (!PyObject_CheckBuffer(object.ptr()))
    throw netio::Error(netio::Errc::invalid_option,
                       fmt::format("expected bytes-like data (bytes, bytearray, memoryview, an array), not {}",
                                   std::string(py::str(py::type::handle_of(object).attr("__name__")))));
  info_ = py::reinterpret_borrow<py::buffer>(object).request();
  if (!PyBuffer_IsContiguous(info_.view(), 'C'))
    throw netio::Error(netio::Errc::invalid_option, "expected C-contiguous bytes-like data");
  span_ = std::span(static_cast<const std::byte*>(info_.ptr), static_cast<std::size_t>(info_.size * info_.itemsize));
}

SharedCallable share_callable(const py::object& callable) {
  if (callable.is_none()) return nullptr;
  if (!PyCallable_Check(callable.ptr()))
    throw netio::Error(netio::Errc::invalid_option,
                       fmt::format("expected a callable, not {}",
                                   std::string(py::str(py::type::handle_of(callable).attr("__name__")))));
  return SharedCallable(new py::object(callable), [](const py::object* held) {
    if (interpreter_finalizing()) {
      // Too late to take the GIL: leak the reference rather than hang.
      return;
    }
    py::gil_scoped_acquire gil;
    delete held;
  });
}

bool interpreter_finalizing() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;  // public from 3.13, which drops the private name
#else
  return _Py_IsFinalizing() != 0;
#endif
}

py::object attribute_bag(const py::dict& fields) {
  // Never destroyed: a static py::object would be released after the interpreter is gone.
  static const auto* namespace_type = new py::object(py::module_::import("types").attr("SimpleNamespace"));
  return (*namespace_type)(**fields);
}

void bind_buffers(py::module_& m) {
  py::class_<Lent> lent(m, "LentBuffer", py::buffer_protocol(),
                        "Bytes netio lends without a copy (a message in its page, a contribution): read them "
                        "through memoryview(); release() gives them back.");
  lent.def("release", &Lent::release, "Gives the bytes back to netio; BufferError while memoryviews use them.")
      .def_property_readonly("released", [](const Lent& l) { return l.released; })
      .def("__len__", [](const Lent& l) { return l.bytes.size(); });
  auto* type = reinterpret_cast<PyTypeObject*>(lent.ptr());
  type->tp_as_buffer->bf_getbuffer = lent_getbuffer;
  type->tp_as_buffer->bf_releasebuffer = lent_releasebuffer;
}

}  // namespace netio::python
