// SPDX-License-Identifier: MIT
// Publish/subscribe: netio.PublishSocket, netio.SubscribeSocket (a handler for low-latency
// subscriptions; recv(), recv_batch() or a for loop for high-throughput ones), netio.Publication.
#include "held_socket.hpp"

#include "netio/pubsub/publish_socket.hpp"
#include "netio/pubsub/subscribe_socket.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <tuple>
#include <vector>

namespace netio::python {

namespace {

using pubsub::Backpressure;
using pubsub::Mode;
using pubsub::Tag;
using Publish = HeldSocket<pubsub::PublishSocket>;
using Subscribe = HeldSocket<pubsub::SubscribeSocket>;

/// A received publication for Python: tag, publisher and its payload lent (data).
struct PyPublication {
  Tag tag = 0;
  py::object lent;  ///< a LentBuffer
  Peer publisher;
};

py::object make_publication(pubsub::Publication publication) {
  auto held = std::make_shared<pubsub::Publication>(std::move(publication));
  Lent lent{held->data(), held, 0, false, "the publication"};
  PyPublication result{held->tag(), make_lent(std::move(lent)), held->publisher()};
  return py::cast(std::move(result));
}

/// One tag or an iterable of tags.
std::vector<Tag> tags_of(const py::object& tags) {
  if (py::isinstance<py::int_>(tags)) return {tags.cast<Tag>()};
  if (!py::isinstance<py::iterable>(tags))
    throw netio::Error(netio::Errc::invalid_option, "tags: expected an int or an iterable of ints");
  std::vector<Tag> all;
  for (const py::handle tag : tags) all.push_back(tag.cast<Tag>());
  return all;
}

std::string subscribe_socket_name(const std::optional<std::string>& name) {
  return "the subscribe socket" + (name ? " " + *name : std::string());
}

}  // namespace

void bind_pubsub(py::module_& m) {
  py::enum_<Mode>(m, "Mode", "A subscription's mode: a handler per message, or messages packed into pages.")
      .value("low_latency", Mode::low_latency)
      .value("high_throughput", Mode::high_throughput);
  py::enum_<Backpressure>(m, "Backpressure",
                          "What a publisher does when a subscriber cannot take a message now: wait, or drop it.")
      .value("publisher_default", Backpressure::publisher_default)
      .value("block", Backpressure::block)
      .value("drop", Backpressure::drop);

  py::class_<PyPublication> publication_class(
      m, "Publication",
      "A message of a high-throughput subscription: tag, publisher, and data, a "
      "memoryview over netio's page valid until release() or the end of a `with` "
      "block.");
  publication_class.def_readonly("tag", &PyPublication::tag).def_readonly("publisher", &PyPublication::publisher);
  def_lent_bytes(publication_class);

  py::class_<Publish> publish(m, "PublishSocket",
                              "Publishes messages under 64-bit tags to every subscriber of the tag; binds `local`.");
  publish
      .def(py::init([](py::object context, const Endpoint& local, std::optional<std::string> name,
                       Backpressure backpressure, nanoseconds send_timeout, nanoseconds flush_timeout,
                       std::size_t max_connections) {
             pubsub::PublishOptions options;
             if (name) options.identity.name = *name;
             options.backpressure = backpressure;
             options.send_timeout = send_timeout;
             options.flush_timeout = flush_timeout;
             options.max_connections = max_connections;
             return std::make_unique<Publish>(std::move(context), "the publish socket at " + local.to_string(), local,
                                              std::move(options));
           }),
           py::arg("context"), py::arg("local"), py::kw_only(), py::arg("name") = py::none(),
           py::arg("backpressure") = Backpressure::block,
           py::arg("send_timeout") = nanoseconds(std::chrono::seconds(10)),
           py::arg("flush_timeout") = nanoseconds(std::chrono::milliseconds(100)), py::arg("max_connections") = 0)
      .def(
          "publish",
          [](Publish& h, Tag tag, const py::object& data) {
            InputBytes bytes(data);
            h.unlocked([&](auto& s) { s.publish(tag, bytes.span()); });
          },
          py::arg("tag"), py::arg("data"),
          "Sends data (anything with the buffer protocol) to every subscriber of tag; a blocking subscriber that "
          "cannot take it is waited for up to send_timeout (netio.TimeoutError naming it).")
      .def(
          "publish_many",
          [](Publish& h, Tag tag, const py::iterable& messages) {
            std::vector<InputBytes> all;
            for (const py::handle message : messages) all.emplace_back(message);
            h.unlocked([&](auto& s) {
              auto publisher = s.publisher();
              for (const auto& bytes : all) publisher.publish(tag, bytes.span());
            });
          },
          py::arg("tag"), py::arg("messages"), "publish() for each message of an iterable, releasing the GIL once.")
      .def(
          "flush", [](Publish& h) { h.unlocked([](auto& s) { s.flush(); }); },
          "Sends the partly filled pages of every high-throughput subscriber now.")
      .def(
          "wait_for_subscribers",
          [](Publish& h, std::size_t count, Timeout timeout) {
            return wait_in_slices(timeout,
                                  [&](nanoseconds slice) { return h.pin()->wait_for_subscribers(count, slice); });
          },
          py::arg("count"), py::arg("timeout") = py::none(),
          "Waits until count subscribers are in with every subscription acknowledged: True, or False on timeout.")
      .def(
          "wait_for_subscriptions",
          [](Publish& h, std::size_t count, Timeout timeout) {
            return wait_in_slices(timeout,
                                  [&](nanoseconds slice) { return h.pin()->wait_for_subscriptions(count, slice); });
          },
          py::arg("count"), py::arg("timeout") = py::none())
      .def_property_readonly("local_endpoint", [](Publish& h) { return h.pin()->local_endpoint(); })
      .def("stats", [](Publish& h) {
        const auto s = h.pin()->stats();
        py::dict fields;
        fields["published"] = s.published;
        fields["unrouted"] = s.unrouted;
        fields["deliveries"] = s.deliveries;
        fields["dropped"] = s.dropped;
        fields["subscriptions"] = s.subscriptions;
        fields["connections"] = s.connections;
        fields["subscribers"] = s.subscribers;
        fields["subscribers_lost"] = s.subscribers_lost;
        return attribute_bag(fields);
      });
  def_close(publish);

  py::class_<Subscribe> subscribe(m, "SubscribeSocket",
                                  "Subscribes to tags on publishers. Low-latency subscriptions call "
                                  "on_message(tag, data, publisher) on the loop thread (data valid during the call); "
                                  "high-throughput ones are taken with recv(), recv_batch() or a for loop.");
  subscribe
      .def(py::init([](py::object context, const py::object& on_message, std::optional<std::string> name,
                       std::optional<std::string> data_host, Backpressure backpressure, nanoseconds ack_timeout,
                       nanoseconds connect_timeout, const py::object& on_subscriptions_lost,
                       const py::object& on_resubscribed) {
             pubsub::SubscribeOptions options;
             if (name) options.identity.name = *name;
             options.data_host = data_host;
             options.backpressure = backpressure;
             options.ack_timeout = ack_timeout;
             options.connect_timeout = connect_timeout;
             if (auto lost = share_callable(on_subscriptions_lost))
               options.on_subscriptions_lost = [lost](const Endpoint& publisher) {
                 call_from_loop(lost, "netio: on_subscriptions_lost", publisher);
               };
             if (auto back = share_callable(on_resubscribed))
               options.on_resubscribed = [back](const Endpoint& publisher) {
                 call_from_loop(back, "netio: on_resubscribed", publisher);
               };
             pubsub::SubscribeSocket::Handler handler;
             if (auto callable = share_callable(on_message)) {
               handler = [callable](Tag tag, std::span<const std::byte> data, const Peer& publisher) {
                 call_from_loop_with_view(
                     callable, "netio.SubscribeSocket on_message", data,
                     [&](const py::object& f, const py::object& view) { f(tag, view, publisher); });
               };
             }
             return std::make_unique<Subscribe>(std::move(context), subscribe_socket_name(name), std::move(handler),
                                                std::move(options));
           }),
           py::arg("context"), py::arg("on_message") = py::none(), py::kw_only(), py::arg("name") = py::none(),
           py::arg("data_host") = py::none(), py::arg("backpressure") = Backpressure::publisher_default,
           py::arg("ack_timeout") = nanoseconds(std::chrono::seconds(10)),
           py::arg("connect_timeout") = netio::default_connect_timeout, py::arg("on_subscriptions_lost") = py::none(),
           py::arg("on_resubscribed") = py::none())
      .def(
          "subscribe",
          [](Subscribe& h, const Endpoint& publisher, const py::object& tags, Mode mode, Backpressure backpressure) {
            const auto all = tags_of(tags);
            h.unlocked([&](auto& s) { s.subscribe(publisher, std::span<const Tag>(all), mode, backpressure); });
          },
          py::arg("publisher"), py::arg("tags"), py::arg("mode") = Mode::high_throughput,
          py::arg("backpressure") = Backpressure::publisher_default,
          "Subscribes to a tag (or an iterable of tags) and waits for the publisher's acknowledgement: every "
          "message published after it arrives. netio.Error if refused, netio.TimeoutError if it does not come.")
      .def(
          "unsubscribe",
          [](Subscribe& h, const Endpoint& publisher, const py::object& tags, Mode mode) {
            const auto all = tags_of(tags);
            h.unlocked([&](auto& s) { s.unsubscribe(publisher, std::span<const Tag>(all), mode); });
          },
          py::arg("publisher"), py::arg("tags"), py::arg("mode") = Mode::high_throughput)
      .def(
          "recv",
          [](Subscribe& h, Timeout timeout) {
            auto publication = receive_in_slices(h, timeout, [](auto& s, nanoseconds slice) { return s.recv(slice); });
            if (!publication)
              throw_timeout(fmt::format("no publication within {} on {}", timeout_text(timeout), h.what()));
            return make_publication(std::move(*publication));
          },
          py::arg("timeout") = py::none(),
          "The next message of a high-throughput subscription (netio.Publication); netio.TimeoutError.")
      .def(
          "try_recv",
          [](Subscribe& h) -> py::object {
            auto publication = h.unlocked([](auto& s) { return s.try_recv(); });
            return publication ? make_publication(std::move(*publication)) : py::none();
          },
          "The next publication if one is there, else None.")
      .def(
          "recv_batch",
          [](Subscribe& h, std::size_t max, Timeout timeout) {
            JoinedBatch messages;
            std::vector<Tag> tags;
            wait_in_slices(timeout, [&](nanoseconds slice) {
              return h.pin()->recv_each(max, slice, [&](Tag tag, std::span<const std::byte> data, const Peer&) {
                messages.add(data);
                tags.push_back(tag);
                return true;
              }) > 0;
            });
            py::list batch(messages.size());
            for (std::size_t i = 0; i < messages.size(); ++i) {
              PyObject* item = PyTuple_New(2);
              if (!item) throw py::error_already_set();
              PyList_SET_ITEM(batch.ptr(), static_cast<Py_ssize_t>(i), item);  // the list owns it from here
              PyTuple_SET_ITEM(item, 0, py::int_(tags[i]).release().ptr());
              PyTuple_SET_ITEM(item, 1, messages.bytes(i));
            }
            return batch;
          },
          py::arg("max") = 1024, py::arg("timeout") = py::none(),
          "Up to max high-throughput messages as a list of (tag, bytes), waiting up to timeout for the first (an "
          "empty list on timeout).")
      .def("__iter__", [](py::object self) { return self; })
      .def(
          "__next__",
          [](Subscribe& h) {
            return next_or_stop([&] {
              auto publication =
                  receive_in_slices(h, std::nullopt, [](auto& s, nanoseconds slice) { return s.recv(slice); });
              return make_publication(std::move(*publication));
            });
          },
          "The next publication, waiting without end; the loop ends when the socket is closed.")
      .def("stats", [](Subscribe& h) {
        const auto s = h.pin()->stats();
        py::dict fields;
        fields["received"] = s.received;
        fields["dropped"] = s.dropped;
        fields["subscriptions_lost"] = s.subscriptions_lost;
        fields["resubscribed"] = s.resubscribed;
        fields["malformed"] = s.malformed;
        return attribute_bag(fields);
      });
  def_close(subscribe);
}

}  // namespace netio::python
