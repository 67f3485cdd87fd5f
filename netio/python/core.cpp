// SPDX-License-Identifier: MIT
// netio.Context, netio.Endpoint, netio.Peer and netio.Message: what every socket of the module
// uses.
#include "bindings.hpp"

#include "netio/emulation.hpp"
#include "netio/error.hpp"
#include "netio/peer.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <set>

namespace netio::python {

namespace {

/// The open contexts, for close_all() (touched under the GIL only). Never destroyed: the
/// atexit hook may run after static destructors would have.
std::set<PyContext*>& open_contexts() {
  static auto* contexts = new std::set<PyContext*>();
  return *contexts;
}

}  // namespace

PyContext::PyContext(ContextOptions options) {
  {
    py::gil_scoped_release unlocked;
    context_ = std::make_unique<netio::Context>(std::move(options));
  }
  open_contexts().insert(this);
}

PyContext::~PyContext() {
  open_contexts().erase(this);
  py::gil_scoped_release unlocked;  // the loop thread may be waiting for the GIL in a handler
  context_.reset();
}

netio::Context& PyContext::get() {
  if (closed_) throw netio::Error(netio::Errc::closed, "the netio.Context was closed");
  return *context_;
}

void PyContext::close() {
  if (closed_) return;
  closed_ = true;
  open_contexts().erase(this);
  py::gil_scoped_release unlocked;
  context_->stop();
}

void PyContext::close_all() {
  const auto contexts = open_contexts();  // close() erases
  for (PyContext* context : contexts) context->close();
}

py::object make_message(netio::Message message) {
  auto held = std::make_shared<netio::Message>(std::move(message));
  Lent lent{held->bytes(), held, 0, false, "the message"};
  PyMessage result{make_lent(std::move(lent)), held->peer()};
  return py::cast(std::move(result));
}

py::object socket_stats(const SocketStats& s) {
  py::dict fields;
  fields["messages"] = s.messages;
  fields["bytes"] = s.bytes;
  fields["pages"] = s.pages;
  fields["flushes_full"] = s.flushes_full;
  fields["flushes_timer"] = s.flushes_timer;
  fields["flushes_explicit"] = s.flushes_explicit;
  fields["backpressure_waits"] = s.backpressure_waits;
  fields["connections"] = s.connections;
  fields["disconnects"] = s.disconnects;
  fields["zero_copy_messages"] = s.zero_copy_messages;
  return attribute_bag(fields);
}

void bind_core(py::module_& m) {
  py::class_<netio::Endpoint>(m, "Endpoint", "Where a socket listens or connects: SCHEME://HOST:PORT[?KEY=VALUE...].")
      .def(py::init([](const std::string& text) { return netio::Endpoint::parse(text); }), py::arg("text"),
           "Parses an endpoint; netio.Error (Errc.malformed_endpoint) naming what is wrong.")
      .def_static("parse", &netio::Endpoint::parse, py::arg("text"))
      .def_readonly("scheme", &netio::Endpoint::scheme)
      .def_readonly("host", &netio::Endpoint::host)
      .def_readonly("port", &netio::Endpoint::port)
      .def_property_readonly("options",
                             [](const netio::Endpoint& e) {
                               py::dict options;
                               for (const auto& [key, value] : e.options) options[py::str(key)] = value;
                               return options;
                             })
      .def("with_port", &netio::Endpoint::with_port, py::arg("port"))
      .def("with_host", &netio::Endpoint::with_host, py::arg("host"))
      .def("__str__", &netio::Endpoint::to_string)
      .def("__repr__", [](const netio::Endpoint& e) { return fmt::format("netio.Endpoint('{}')", e.to_string()); })
      .def("__eq__", [](const netio::Endpoint& a, const netio::Endpoint& b) { return a == b; })
      .def("__hash__", [](const netio::Endpoint& e) { return py::hash(py::str(e.to_string())); });
  py::implicitly_convertible<py::str, netio::Endpoint>();

  py::class_<PyContext>(m, "Context",
                        "One netio event loop and its thread; every socket is made from a context. Use it as a "
                        "context manager, or close() it.")
      .def(py::init([](bool busy_poll, std::optional<int> cpu, std::optional<std::string> emulation) {
             ContextOptions options;
             options.busy_poll = busy_poll;
             options.cpu = cpu;
             if (emulation) options.emulation = netio::parse_emulation_spec(*emulation);
             return std::make_unique<PyContext>(std::move(options));
           }),
           py::kw_only(), py::arg("busy_poll") = false, py::arg("cpu") = py::none(), py::arg("emulation") = py::none(),
           "busy_poll: the loop spins instead of sleeping (lower latency, a core taken); cpu: pin the loop "
           "thread; emulation: an emulated network spec, e.g. 'delay=lognormal:mean=50us,sigma=0.8'.")
      .def("close", &PyContext::close, "Stops the loop and joins its thread; sockets still open raise ClosedError.")
      .def_property_readonly("closed", &PyContext::closed)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyContext& c, const py::args&) { c.close(); });
  m.def("_close_all_contexts", &PyContext::close_all);

  py::class_<netio::Peer>(m, "Peer",
                          "The connection a message came from: who sent it (name, endpoint) and how to answer it.")
      .def_property_readonly("connection", &netio::Peer::connection)
      .def_property_readonly("address", &netio::Peer::address, "The connection's source address.")
      .def_property_readonly("name", [](const netio::Peer& p) { return p.name(); })
      .def_property_readonly(
          "endpoint", [](const netio::Peer& p) { return p.identity().endpoint; },
          "Where the sender says it can be reached, or None.")
      .def(
          "try_reply",
          [](const netio::Peer& p, const py::object& data) {
            InputBytes bytes(data);
            return p.try_reply(bytes.span());
          },
          py::arg("data"), "Replies on the connection without waiting: False when the reply window is full.")
      .def(
          "reply",
          [](const netio::Peer& p, const py::object& data, nanoseconds timeout) {
            InputBytes bytes(data);
            py::gil_scoped_release unlocked;
            p.reply(bytes.span(), timeout);
          },
          py::arg("data"), py::arg("timeout") = nanoseconds(std::chrono::seconds(10)),
          "Replies on the connection, waiting up to timeout for room (not on the loop thread: use try_reply).")
      .def("__bool__", [](const netio::Peer& p) { return static_cast<bool>(p); })
      .def("__str__", &netio::Peer::to_string)
      .def("__repr__", [](const netio::Peer& p) { return fmt::format("<netio.Peer {}>", p.to_string()); })
      .def("__eq__", [](const netio::Peer& a, const netio::Peer& b) { return a == b; })
      .def("__hash__", [](const netio::Peer& p) { return py::hash(py::int_(p.connection())); });

  py::class_<PyMessage> message_class(
      m, "Message",
      "A received message: `data` is a memoryview over netio's page (no copy), valid until "
      "release() or the end of a `with` block; bytes(message) copies it.");
  message_class.def_property_readonly("peer", [](const PyMessage& msg) { return msg.peer; });
  def_lent_bytes(message_class);
}

}  // namespace netio::python
