// SPDX-License-Identifier: MIT
/// @file
/// The subscribing side of publish/subscribe.
///
/// A SubscribeSocket subscribes to tags on one or more publishers. It sends each request to
/// the publisher over a low-latency control connection (one per publisher) and returns only
/// once the publisher acknowledged it: every message published after that point arrives (no
/// slow joiner). Data arrives on receive sockets of its own, one per mode, which the
/// publisher connects to:
///   - low-latency subscriptions: the message handler given to the constructor runs on the
///     event-loop thread for each message, with its tag, its payload (valid during the call)
///     and the publisher;
///   - high-throughput subscriptions: recv() takes the next Publication on any thread.
/// When a publisher goes away (its control connection drops), the socket tells the
/// application (on_subscriptions_lost), reconnects with a growing, bounded retry interval and
/// subscribes again to everything it had; once all is acknowledged, on_resubscribed runs.
/// Messages published while the publisher was gone, or before the resubscription was
/// acknowledged, are not delivered.
///
/// Thread-safety: every method from any thread. subscribe()/unsubscribe() wait for the
/// acknowledgement: on the event-loop thread they throw Errc::would_block; use the forms
/// taking a callback there. Callbacks run on the event-loop thread.
/// Lifetime: destroy before the Context, on any thread, also inside any of its own callbacks
/// (the message handler, a subscribe()/unsubscribe() callback, on_subscriptions_lost,
/// on_resubscribed). No callback runs once the destructor has returned, except the pending
/// subscribe()/unsubscribe() callbacks, which the destructor itself calls with Errc::closed.
/// Publications taken out stay valid after it.
#pragma once

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/error.hpp"
#include "netio/peer.hpp"
#include "netio/pubsub/publication.hpp"
#include "netio/pubsub/subscription.hpp"
#include "netio/receive_budget.hpp"
#include "netio/socket_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace netio::pubsub {

struct SubscribeOptions {
  /// Declared to publishers (their SubscriberInfo::identity); name default "HOST:PID".
  Identity identity;
  /// Where the data receive sockets listen (a host). Unset: the publisher's host when that
  /// is a loopback address, else 0.0.0.0 (and the publisher connects back to the address
  /// the subscription request came from).
  std::optional<std::string> data_host;
  /// Per subscription, unless given to subscribe().
  Backpressure backpressure = Backpressure::publisher_default;
  /// How long subscribe() and unsubscribe() wait for the acknowledgement, counted once the
  /// control connection is up.
  std::chrono::nanoseconds ack_timeout = std::chrono::seconds(10);
  /// How long a control connection to a publisher not there yet is tried again
  /// (netio/socket_options.hpp: 0 for ever, connect_once for one attempt). A subscription
  /// made before its publisher started waits for it that long (then fails with
  /// Errc::timeout naming the publisher and the attempts) and is acknowledged once it is up.
  std::chrono::nanoseconds connect_timeout = default_connect_timeout;
  /// After a publisher is lost: the first retry waits this long, each further one twice as
  /// long as the one before, but never more than max_resubscribe_interval.
  std::chrono::nanoseconds resubscribe_interval = std::chrono::milliseconds(100);
  std::chrono::nanoseconds max_resubscribe_interval = std::chrono::seconds(2);
  /// The publisher (its endpoint as given to subscribe()) went away with subscriptions of
  /// this socket; they are being restored. On the event-loop thread.
  std::function<void(const Endpoint& publisher)> on_subscriptions_lost;
  /// Every subscription to that publisher is acknowledged again. On the event-loop thread.
  std::function<void(const Endpoint& publisher)> on_resubscribed;
  /// Receive sockets: the largest payload taken (high-throughput, low-latency) and buffering
  /// per publisher. Over libfabric a low-latency socket pre-posts 4 × its limit per publisher.
  std::size_t max_message_size = 256 * 1024 * 1024;
  std::size_t low_latency_max_message_size = 1024 * 1024;
  std::size_t page_credits = 8;  ///< high-throughput pages per publisher queued at most before reading stalls
  /// What the data receive sockets hold for publishers at most (netio/receive_budget.hpp):
  /// both count against this one when set, else each against a budget of its own of 1 GiB.
  std::shared_ptr<ReceiveBudget> receive_budget;
  /// Which publishers may connect the data connections (netio/socket_options.hpp): limits on the
  /// data receive sockets, allowed networks, and a pre-shared key. With a key, publishers
  /// must hold it too, and the control connections prove it (PublishOptions::admission.key).
  AdmissionOptions admission;
};

struct SubscribeStats {
  std::uint64_t received = 0;  ///< messages delivered to the message handler or taken by recv()
  std::uint64_t dropped = 0;   ///< messages publishers dropped for this socket (Backpressure::drop), as reported
  std::uint64_t subscriptions_lost = 0;  ///< times a publisher went away with subscriptions
  std::uint64_t resubscribed = 0;        ///< times all of a publisher's subscriptions were restored
  std::uint64_t malformed = 0;           ///< data messages too short to carry a tag (ignored)
};

class SubscribeSocket {
 public:
  using Done = std::function<void(const Error* error)>;  ///< nullptr: acknowledged
  /// Low-latency subscriptions: called on the event-loop thread per message; `data` is valid
  /// during the call only. Must not block for long (it holds up the whole loop).
  using Handler = std::function<void(Tag tag, std::span<const std::byte> data, const Peer& publisher)>;

  /// A socket for high-throughput subscriptions only (recv(), recv_each()).
  explicit SubscribeSocket(Context& context, SubscribeOptions options = {});
  /// A socket whose low-latency subscriptions deliver to `on_message` (high-throughput ones
  /// still go to recv()). An empty handler is as the constructor above.
  SubscribeSocket(Context& context, Handler on_message, SubscribeOptions options = {});
  ~SubscribeSocket();
  SubscribeSocket(const SubscribeSocket&) = delete;
  SubscribeSocket& operator=(const SubscribeSocket&) = delete;

  /// Subscribes to `tag` on `publisher` and waits for the acknowledgement (a publisher not
  /// started yet: up to connect_timeout for it, then up to ack_timeout). Subscribing again
  /// to what is already subscribed only changes its back-pressure. Throws netio::Error: the
  /// publisher's refusal (Errc::handshake_rejected, naming it and why), Errc::timeout
  /// (connect_timeout, ack_timeout), Errc::would_block on the event-loop thread, Errc::invalid_option for a
  /// low-latency subscription on a socket constructed without a message handler.
  void subscribe(const Endpoint& publisher, Tag tag, Mode mode = Mode::high_throughput,
                 Backpressure backpressure = Backpressure::publisher_default);
  /// While a publisher is gone (between on_subscriptions_lost and on_resubscribed) new
  /// subscriptions to it fail with Errc::disconnected; the old ones are being restored.
  /// As subscribe(), but returns at once; `done` runs on the event-loop thread once the
  /// publisher acknowledged (nullptr) or it failed (the error).
  void subscribe(const Endpoint& publisher, Tag tag, Mode mode, Backpressure backpressure, Done done);

  /// Subscribes to several tags with one request and one acknowledgement (one round trip):
  /// the publisher routes all of them from the same moment on. More than 256 tags go as
  /// several requests of 256, each acknowledged on its own; the call returns (or `done`
  /// runs) once all are, or with the first error. An empty list is acknowledged at once.
  /// Requests beyond the control connection's 32 buffers wait for free ones, in order.
  void subscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode = Mode::high_throughput,
                 Backpressure backpressure = Backpressure::publisher_default);
  void subscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode, Backpressure backpressure, Done done);

  /// Ends the subscription and waits for the publisher's acknowledgement; messages of the
  /// tag published before it may still arrive. Unknown subscriptions are ignored.
  void unsubscribe(const Endpoint& publisher, Tag tag, Mode mode = Mode::high_throughput);
  void unsubscribe(const Endpoint& publisher, Tag tag, Mode mode, Done done);
  void unsubscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode = Mode::high_throughput);
  void unsubscribe(const Endpoint& publisher, std::span<const Tag> tags, Mode mode, Done done);

  /// The next message of a high-throughput subscription, waiting up to `timeout`;
  /// std::nullopt on timeout. Any thread; each message goes to one caller.
  std::optional<Publication> recv(std::chrono::nanoseconds timeout);
  std::optional<Publication> try_recv() { return recv(std::chrono::nanoseconds::zero()); }
  /// The batch form, for small messages: hands up to `max` messages to `handler` on the
  /// calling thread, waiting up to `timeout` for the first and taking the rest only if they
  /// are there already; each view is valid during the call only. Returns how many the handler
  /// was given. The handler returns false to end the batch after that message.
  using Visitor = std::function<bool(Tag tag, std::span<const std::byte> data, const Peer& publisher)>;
  std::size_t recv_each(std::size_t max, std::chrono::nanoseconds timeout, const Visitor& visitor);

  SubscribeStats stats() const noexcept;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace netio::pubsub
