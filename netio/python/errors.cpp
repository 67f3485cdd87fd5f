// SPDX-License-Identifier: MIT
// netio.Error and its subclasses: every netio::Error thrown by a call becomes one, carrying its
// Errc as `errc` (netio.Errc; an errno as int for a failed system call).
#include "bindings.hpp"

#include "netio/error.hpp"

#include <pybind11/stl.h>

namespace netio::python {

namespace {

py::handle error_type;
py::handle timeout_error_type;
py::handle closed_error_type;

py::handle new_exception(py::module_& m, const char* name, py::handle bases, const char* doc) {
  const std::string qualified = std::string("netio.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module keeps the reference
  return type;
}

}  // namespace

py::object make_python_error(const netio::Error& error) {
  py::handle type = error_type;
  py::object errc;
  if (error.code().category() == netio::error_category()) {
    const auto code = static_cast<netio::Errc>(error.code().value());
    errc = py::cast(code);
    if (code == netio::Errc::timeout) type = timeout_error_type;
    if (code == netio::Errc::closed) type = closed_error_type;
  } else {
    errc = py::int_(error.code().value());
  }
  py::object instance = py::reinterpret_borrow<py::object>(type)(error.what());
  instance.attr("errc") = errc;
  return instance;
}

void set_python_error(const netio::Error& error) {
  const py::object instance = make_python_error(error);
  PyErr_SetObject(py::type::handle_of(instance).ptr(), instance.ptr());
}

void throw_timeout(const std::string& what) { throw netio::Error(netio::Errc::timeout, what); }

void bind_errors(py::module_& m) {
  py::enum_<netio::Errc>(m, "Errc", "What went wrong: the code of every netio.Error (netio/error.hpp).")
      .value("malformed_endpoint", netio::Errc::malformed_endpoint)
      .value("resolve_failed", netio::Errc::resolve_failed)
      .value("connection_refused", netio::Errc::connection_refused)
      .value("handshake_rejected", netio::Errc::handshake_rejected)
      .value("protocol_error", netio::Errc::protocol_error)
      .value("disconnected", netio::Errc::disconnected)
      .value("timeout", netio::Errc::timeout)
      .value("closed", netio::Errc::closed)
      .value("message_too_large", netio::Errc::message_too_large)
      .value("backend_error", netio::Errc::backend_error)
      .value("provider_unavailable", netio::Errc::provider_unavailable)
      .value("would_block", netio::Errc::would_block)
      .value("invalid_option", netio::Errc::invalid_option);

  error_type = new_exception(m, "Error", PyExc_Exception,
                             "A netio error: `errc` says what happened (netio.Errc, or an errno for a failed "
                             "system call), the message names the endpoint, the peer and what was wrong.");
  error_type.attr("errc") = py::none();
  timeout_error_type =
      new_exception(m, "TimeoutError", py::make_tuple(error_type, py::handle(PyExc_TimeoutError)),
                    "A blocking call ran out of time (errc Errc.timeout); also a builtin TimeoutError.");
  closed_error_type = new_exception(m, "ClosedError", error_type,
                                    "The socket, context or message was closed or released (errc Errc.closed).");

  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const netio::Error& error) {
      set_python_error(error);
    }
  });
}

}  // namespace netio::python
