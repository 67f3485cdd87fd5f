// SPDX-License-Identifier: MIT
// The point-to-point sockets: low-latency (a handler per message on the loop thread) and
// high-throughput (messages packed into pages, taken with recv(), recv_batch() or iteration).
#include "held_socket.hpp"

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <vector>

namespace netio::python {

namespace {

using LowLatencySend = HeldSocket<netio::LowLatencySendSocket>;
using LowLatencyReceive = HeldSocket<netio::LowLatencyReceiveSocket>;
using HighThroughputSend = HeldSocket<netio::HighThroughputSendSocket>;
using HighThroughputReceive = HeldSocket<netio::HighThroughputReceiveSocket>;

Identity identity_of(const std::optional<std::string>& name) {
  Identity identity;
  if (name) identity.name = *name;
  return identity;
}

ReplyOptions replies_to(const py::object& on_reply) {
  ReplyOptions replies;
  if (auto callable = share_callable(on_reply)) {
    replies.on_reply = [callable](std::span<const std::byte> reply) {
      call_from_loop_with_view(callable, "netio: on_reply", reply,
                               [](const py::object& f, const py::object& view) { f(view); });
    };
  }
  return replies;
}

ConnectionEvents events_of(const py::object& on_connected, const py::object& on_disconnected) {
  ConnectionEvents events;
  if (auto connected = share_callable(on_connected))
    events.on_connected = [connected](const Peer& peer) { call_from_loop(connected, "netio: on_connected", peer); };
  if (auto disconnected = share_callable(on_disconnected)) {
    events.on_disconnected = [disconnected](const Peer& peer, const Error& why) {
      if (interpreter_finalizing()) return;
      py::gil_scoped_acquire gil;
      try {
        (*disconnected)(peer, make_python_error(why));
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("netio: on_disconnected");
      }
    };
  }
  return events;
}

/// A reply from recv_reply(), or TimeoutError.
template <typename Held>
py::object recv_reply(Held& held, Timeout timeout) {
  auto reply = receive_in_slices(held, timeout, [](auto& s, nanoseconds slice) { return s.recv_reply(slice); });
  if (!reply) throw_timeout(fmt::format("no reply within {} on {}", timeout_text(timeout), held.what()));
  return make_message(std::move(*reply));
}

/// wait_connected() and the other waits that answer true or false.
template <typename Held, typename Wait>
bool wait_for(Held& held, Timeout timeout, Wait wait) {
  return wait_in_slices(timeout, [&](nanoseconds slice) { return wait(*held.pin(), slice); });
}

/// What the send sockets share: sending, waiting, replies, closing.
template <typename Class>
void def_send_methods(Class& cls) {
  using Held = typename Class::type;
  cls.def(
         "wait_connected",
         [](Held& h, Timeout timeout) {
           return wait_for(h, timeout, [](auto& s, nanoseconds slice) { return s.wait_connected(slice); });
         },
         py::arg("timeout") = py::none(),
         "Waits until the receiver accepted the connection: True, or False on timeout (the socket keeps trying); "
         "netio.Error when it was rejected or connect_timeout passed.")
      .def_property_readonly("connected", [](Held& h) { return h.pin()->connected(); })
      .def_property_readonly(
          "failure",
          [](Held& h) -> py::object {
            auto failure = h.pin()->failure();
            return failure ? make_python_error(*failure) : py::none();
          },
          "The netio.Error the connection failed with, or None.")
      .def(
          "send",
          [](Held& h, const py::object& data) {
            InputBytes bytes(data);
            h.unlocked([&](auto& s) { s.send(bytes.span()); });
          },
          py::arg("data"),
          "Sends one message (anything with the buffer protocol), waiting up to send_timeout for room.")
      .def(
          "try_send",
          [](Held& h, const py::object& data) {
            InputBytes bytes(data);
            return h.unlocked([&](auto& s) { return s.try_send(bytes.span()); });
          },
          py::arg("data"), "Sends one message if there is room now: False, with nothing sent, if not.")
      .def(
          "send_many",
          [](Held& h, const py::iterable& messages) {
            std::vector<InputBytes> all;
            for (const py::handle message : messages) all.emplace_back(message);
            h.unlocked([&](auto& s) {
              for (const auto& bytes : all) s.send(bytes.span());
            });
          },
          py::arg("messages"), "Sends each message of an iterable, in order, releasing the GIL once for all.")
      .def(
          "send_parts",
          [](Held& h, const py::iterable& parts) {
            std::vector<InputBytes> all;
            for (const py::handle part : parts) all.emplace_back(part);
            std::vector<std::span<const std::byte>> spans;
            for (const auto& bytes : all) spans.push_back(bytes.span());
            h.unlocked([&](auto& s) { s.send_parts(spans); });
          },
          py::arg("parts"), "Sends one message made of the parts (a header and a payload, say), without joining them.")
      .def("recv_reply", &recv_reply<Held>, py::arg("timeout") = py::none(),
           "The next reply of the receiver (Peer.reply on its side) as a netio.Message; netio.TimeoutError.")
      .def(
          "abort", [](Held& h, const std::string& reason) { h.unlocked([&](auto& s) { s.abort(reason); }); },
          py::arg("reason"), "Closes now, dropping what is queued (a receiver known to be gone).")
      .def_property_readonly("remote", [](Held& h) { return h.pin()->remote(); })
      .def("stats", [](Held& h) { return socket_stats(h.pin()->stats()); });
  def_close(cls);
}

}  // namespace

void bind_sockets(py::module_& m) {
  py::class_<LowLatencySend> ll_send(m, "LowLatencySendSocket",
                                     "Sends each message at once to a LowLatencyReceiveSocket (copied: the data may "
                                     "be reused when send() returns).");
  ll_send
      .def(py::init([](py::object context, const Endpoint& remote, std::optional<std::string> name,
                       const py::object& on_reply, std::size_t buffer_count, std::size_t buffer_size,
                       nanoseconds send_timeout, nanoseconds connect_timeout) {
             LowLatencySendOptions options;
             options.identity = identity_of(name);
             options.replies = replies_to(on_reply);
             options.buffer_count = buffer_count;
             options.buffer_size = buffer_size;
             options.send_timeout = send_timeout;
             options.connect_timeout = connect_timeout;
             return std::make_unique<LowLatencySend>(std::move(context),
                                                     "the low-latency send socket to " + remote.to_string(), remote,
                                                     std::move(options));
           }),
           py::arg("context"), py::arg("remote"), py::kw_only(), py::arg("name") = py::none(),
           py::arg("on_reply") = py::none(), py::arg("buffer_count") = 64, py::arg("buffer_size") = 64 * 1024,
           py::arg("send_timeout") = nanoseconds(std::chrono::seconds(10)),
           py::arg("connect_timeout") = netio::default_connect_timeout)
      .def(
          "wait_sent",
          [](LowLatencySend& h, Timeout timeout) {
            return wait_for(h, timeout, [](auto& s, nanoseconds slice) { return s.wait_sent(slice); });
          },
          py::arg("timeout") = py::none(), "Waits until everything sent was handed to the network: True, or False.");
  def_send_methods(ll_send);

  py::class_<HighThroughputSend> ht_send(m, "HighThroughputSendSocket",
                                         "Packs messages into pages for a HighThroughputReceiveSocket; a page goes "
                                         "when full, on flush() or after flush_timeout.");
  ht_send
      .def(py::init([](py::object context, const Endpoint& remote, std::optional<std::string> name,
                       const py::object& on_reply, std::size_t page_size, std::size_t page_count,
                       nanoseconds flush_timeout, nanoseconds send_timeout,
                       std::optional<std::size_t> zero_copy_threshold, nanoseconds connect_timeout) {
             HighThroughputSendOptions options;
             options.identity = identity_of(name);
             options.replies = replies_to(on_reply);
             options.page_size = page_size;
             options.page_count = page_count;
             options.flush_timeout = flush_timeout;
             options.send_timeout = send_timeout;
             options.zero_copy_threshold = zero_copy_threshold;
             options.connect_timeout = connect_timeout;
             return std::make_unique<HighThroughputSend>(std::move(context),
                                                         "the high-throughput send socket to " + remote.to_string(),
                                                         remote, std::move(options));
           }),
           py::arg("context"), py::arg("remote"), py::kw_only(), py::arg("name") = py::none(),
           py::arg("on_reply") = py::none(), py::arg("page_size") = 1024 * 1024, py::arg("page_count") = 16,
           py::arg("flush_timeout") = nanoseconds(std::chrono::seconds(2)),
           py::arg("send_timeout") = nanoseconds(std::chrono::seconds(10)), py::arg("zero_copy_threshold") = py::none(),
           py::arg("connect_timeout") = netio::default_connect_timeout)
      .def(
          "flush", [](HighThroughputSend& h) { h.unlocked([](auto& s) { s.flush(); }); },
          "Sends the partly filled page now.")
      .def(
          "flush_and_wait",
          [](HighThroughputSend& h, Timeout timeout) {
            return wait_for(h, timeout, [](auto& s, nanoseconds slice) { return s.flush_and_wait(slice); });
          },
          py::arg("timeout") = py::none(), "flush(), then waits until every page was sent: True, or False on timeout.");
  def_send_methods(ht_send);

  py::class_<LowLatencyReceive> ll_receive(m, "LowLatencyReceiveSocket",
                                           "Listens for LowLatencySendSockets; handler(data, peer) runs on the loop "
                                           "thread for every message, data a memoryview valid during the call only.");
  ll_receive
      .def(
          py::init([](py::object context, const Endpoint& local, const py::object& handler,
                      std::size_t max_message_size, const py::object& on_connected, const py::object& on_disconnected) {
            auto callable = share_callable(handler);
            if (!callable) throw netio::Error(netio::Errc::invalid_option, "LowLatencyReceiveSocket: handler is None");
            LowLatencyReceiveOptions options;
            options.max_message_size = max_message_size;
            options.events = events_of(on_connected, on_disconnected);
            auto on_message = [callable](std::span<const std::byte> message, const Peer& peer) {
              call_from_loop_with_view(callable, "netio.LowLatencyReceiveSocket handler", message,
                                       [&](const py::object& f, const py::object& view) { f(view, peer); });
            };
            return std::make_unique<LowLatencyReceive>(std::move(context),
                                                       "the low-latency receive socket at " + local.to_string(), local,
                                                       std::move(on_message), std::move(options));
          }),
          py::arg("context"), py::arg("local"), py::arg("handler"), py::kw_only(),
          py::arg("max_message_size") = 1024 * 1024, py::arg("on_connected") = py::none(),
          py::arg("on_disconnected") = py::none())
      .def_property_readonly("local_endpoint", [](LowLatencyReceive& h) { return h.pin()->local_endpoint(); })
      .def("stats", [](LowLatencyReceive& h) { return socket_stats(h.pin()->stats()); });
  def_close(ll_receive);

  py::class_<HighThroughputReceive> ht_receive(m, "HighThroughputReceiveSocket",
                                               "Listens for HighThroughputSendSockets; take messages with recv(), "
                                               "recv_batch() or a for loop (each releases the GIL while it waits).");
  ht_receive
      .def(py::init([](py::object context, const Endpoint& local, std::size_t max_message_size,
                       std::size_t page_credits, const py::object& on_connected, const py::object& on_disconnected) {
             HighThroughputReceiveOptions options;
             options.max_message_size = max_message_size;
             options.page_credits = page_credits;
             options.events = events_of(on_connected, on_disconnected);
             return std::make_unique<HighThroughputReceive>(
                 std::move(context), "the high-throughput receive socket at " + local.to_string(), local,
                 std::move(options));
           }),
           py::arg("context"), py::arg("local"), py::kw_only(), py::arg("max_message_size") = 256 * 1024 * 1024,
           py::arg("page_credits") = 8, py::arg("on_connected") = py::none(), py::arg("on_disconnected") = py::none())
      .def(
          "recv",
          [](HighThroughputReceive& h, Timeout timeout) {
            auto message = receive_in_slices(h, timeout, [](auto& s, nanoseconds slice) { return s.recv(slice); });
            if (!message) throw_timeout(fmt::format("no message within {} on {}", timeout_text(timeout), h.what()));
            return make_message(std::move(*message));
          },
          py::arg("timeout") = py::none(),
          "The next message (netio.Message, its data in netio's page), waiting up to timeout seconds (None: "
          "without end); netio.TimeoutError.")
      .def(
          "try_recv",
          [](HighThroughputReceive& h) -> py::object {
            auto message = h.unlocked([](auto& s) { return s.try_recv(); });
            return message ? make_message(std::move(*message)) : py::none();
          },
          "The next message if one is there, else None.")
      .def(
          "recv_batch",
          [](HighThroughputReceive& h, std::size_t max, Timeout timeout) {
            JoinedBatch messages;
            wait_in_slices(timeout, [&](nanoseconds slice) {
              return h.pin()->recv_each(max, slice, [&](std::span<const std::byte> message) {
                messages.add(message);
                return true;
              }) > 0;
            });
            py::list batch(messages.size());
            for (std::size_t i = 0; i < messages.size(); ++i)
              PyList_SET_ITEM(batch.ptr(), static_cast<Py_ssize_t>(i), messages.bytes(i));
            return batch;
          },
          py::arg("max") = 1024, py::arg("timeout") = py::none(),
          "Up to max messages as a list of bytes, waiting up to timeout for the first (an empty list on timeout) "
          "and taking the rest only if they are there: the fast way to take small messages.")
      .def("__iter__", [](py::object self) { return self; })
      .def(
          "__next__",
          [](HighThroughputReceive& h) {
            return next_or_stop([&] {
              auto message =
                  receive_in_slices(h, std::nullopt, [](auto& s, nanoseconds slice) { return s.recv(slice); });
              return make_message(std::move(*message));
            });
          },
          "The next message, waiting without end; the loop ends when the socket is closed.")
      .def_property_readonly("local_endpoint", [](HighThroughputReceive& h) { return h.pin()->local_endpoint(); })
      .def("stats", [](HighThroughputReceive& h) { return socket_stats(h.pin()->stats()); });
  def_close(ht_receive);
}

}  // namespace netio::python
