// SPDX-License-Identifier: MIT
/// @file
/// The publishing side of publish/subscribe.
///
/// A PublishSocket listens on an endpoint for subscription requests (a low-latency
/// connection from each SubscribeSocket). For each request it records the subscription in its
/// table, opens (or reuses) a data connection of the requested mode to the subscriber — one
/// per (subscriber, mode), however many tags share it — and acknowledges only once that
/// connection is up. Every message published after the acknowledgement reaches the
/// subscriber (no slow joiner). High-throughput data connections draw their pages from one
/// pool shared by all of them, so the publisher's memory is bounded whatever the number of
/// subscribers; each connection may hold at most the pool's per_connection pages.
///
/// A data message is the 8-byte little-endian tag followed by the payload.
///
/// With PublishOptions::max_connections set, at most that many data connections of each mode
/// are open at once (on-demand connections, as MultiDestinationSendSocket): the data
/// connections become destinations of a MultiDestinationSendSocket per mode, keyed by the
/// subscriber's data endpoint, and when a message is for a subscriber whose connection is
/// not open, the policy's victim (another subscriber's connection nobody is sending on) is
/// torn down, its queued messages delivered first, and the connection re-made. Every promise
/// above holds: a torn-down subscriber's messages wait for the re-connect (publish() on a
/// user thread, block and drop subscribers alike, up to send_timeout); try_publish() and
/// publish() on the loop thread never wait, so there such a subscriber is skipped
/// (try_publish), refused with Errc::would_block (publish, block) or has the message dropped
/// and counted (publish, drop); one thread's messages keep their order for each subscriber,
/// also across a re-connect: the old connection's close ends only once the subscriber has
/// read everything sent on it (close_awaits_receiver), and only then does the new one open.
/// The subscriber sees only its data connection close and come back, nothing in its API. A
/// re-connect that is refused means the subscriber is gone: it is skipped from then on, as a
/// failed connection is, and removed when its control connection drops.
///
/// Thread-safety: publish(), try_publish(), flush(), stats() and the other const methods from
/// any number of threads at once; messages published by one thread keep their order for
/// every subscriber. Subscriptions are handled on the event-loop thread.
/// On the event-loop thread nothing waits: publish() there throws Errc::would_block when a
/// blocking subscriber cannot take the message now (the others got it); use try_publish().
/// Lifetime: destroy before the Context. On a user thread the destructor closes every data
/// connection after what was published went out (waiting up to send_timeout for each);
/// on the loop thread it starts those closes and returns.
#pragma once

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/multi_destination_send_socket.hpp"
#include "netio/page_pool.hpp"
#include "netio/pubsub/publish_progress.hpp"
#include "netio/pubsub/subscription.hpp"
#include "netio/socket_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace netio::pubsub {

struct PublishOptions {
  /// Declared to subscribers (Publication::publisher().identity()): name default "HOST:PID";
  /// endpoint default the endpoint this socket publishes on (its local_endpoint()).
  Identity identity;
  /// For subscriptions that leave the choice to the publisher (Backpressure::publisher_default).
  Backpressure backpressure = Backpressure::block;
  /// How long publish() waits for a blocking subscriber, and a close for what is queued.
  std::chrono::nanoseconds send_timeout = std::chrono::seconds(10);
  /// How long a new data connection may take to come up before the subscription is refused.
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(5);
  /// The shared page pool of the high-throughput data connections (page_count × page_size
  /// at most, allocated as first used; per_connection pages per subscriber at once).
  PagePoolOptions pages{.page_count = 64, .page_size = 1024 * 1024, .per_connection = 16};
  /// A partly filled page of a high-throughput subscriber waits at most this long.
  std::chrono::nanoseconds flush_timeout = std::chrono::milliseconds(100);
  std::size_t low_latency_buffers = 64;  ///< messages in flight per low-latency subscriber
  /// How often drops are reported to the subscribers that lost messages.
  std::chrono::nanoseconds drop_report_interval = std::chrono::milliseconds(50);
  /// Who may subscribe (netio/socket_options.hpp): limits on the control listener, allowed
  /// networks, and a pre-shared key. With a key, every subscriber must hold it, and the
  /// publisher proves it on its data connections too (SubscribeOptions::admission.key).
  AdmissionOptions admission;
  /// Data connections open at once, per mode (low-latency and high-throughput ones are
  /// limited separately); 0: no limit (one connection per subscriber and mode, open while it
  /// has subscriptions). With a limit, connection_policy picks the connection to tear down.
  std::size_t max_connections = 0;
  ConnectionPolicy connection_policy = ConnectionPolicy::lru;
  /// Tags one subscriber may hold per mode (each costs the publisher a route, about 150
  /// bytes): a request that would go beyond is refused, naming the limit (0: no limit).
  std::size_t max_tags_per_subscriber = 65536;
};

/// Counters of the whole socket; relaxed, cheap to read, not one atomic snapshot: they are
/// updated one after the other, so two read together may straddle an update. A subscriber
/// that goes is counted in `subscribers_lost` and leaves `subscriptions` before its
/// `connections` drop: a snapshot that shows its connections gone shows the rest of its
/// removal too.
struct PublishStats {
  std::uint64_t published = 0;         ///< publish()/try_publish() calls completed (all subscribers served or skipped)
  std::uint64_t unrouted = 0;          ///< messages of tags nobody subscribed to
  std::uint64_t deliveries = 0;        ///< messages handed to a subscriber's connection
  std::uint64_t dropped = 0;           ///< messages dropped for subscribers under Backpressure::drop
  std::uint64_t subscriptions = 0;     ///< current (tag, subscriber, mode) entries
  std::uint64_t connections = 0;       ///< current data connections
  std::uint64_t subscribers = 0;       ///< current subscribers (control connections) with a subscription
  std::uint64_t subscribers_lost = 0;  ///< control connections that went away with subscriptions
};

class PublishSocket {
 public:
  /// Binds and listens for subscription requests; throws netio::Error when the endpoint
  /// cannot be bound.
  PublishSocket(Context& context, const Endpoint& local, PublishOptions options = {});
  ~PublishSocket();
  PublishSocket(const PublishSocket&) = delete;
  PublishSocket& operator=(const PublishSocket&) = delete;

  /// Sends `data` under `tag` to every subscriber of the tag. A subscriber under
  /// Backpressure::block that cannot take it now is waited for (up to send_timeout);
  /// one under drop has it dropped and counted. A subscriber whose connection is gone is
  /// skipped. Throws netio::Error: Errc::timeout naming the subscribers that did not take the
  /// message in time (all the others have it), Errc::would_block on the event-loop thread in
  /// that case (see above), Errc::message_too_large beyond what a subscriber takes.
  void publish(Tag tag, std::span<const std::byte> data);

  /// A handle for one publishing thread, with a cheaper publish() (see Publisher below).
  class Publisher;
  Publisher publisher();

  /// The non-blocking form, which never duplicates. True when every subscriber of `tag` has
  /// the message (or dropped it under Backpressure::drop, or left). False when some could
  /// not take it now: `progress.skipped()` names them, and calling again with the same
  /// progress (and the same tag and data) sends to those only. A fresh or reset() progress
  /// starts a new message. Subscribers that join after the first attempt are not added.
  bool try_publish(Tag tag, std::span<const std::byte> data, PublishProgress& progress);

  /// Sends the partly filled pages of every high-throughput subscriber now.
  void flush();

  /// Waits until at least `count` subscriptions are acknowledged; false on timeout.
  [[nodiscard]] bool wait_for_subscriptions(std::size_t count, std::chrono::nanoseconds timeout) const;
  /// Waits until at least `count` subscribers have subscribed and every subscription is
  /// acknowledged; false on timeout. A subscriber that subscribes all its tags with one
  /// subscribe() call (one request) is then in with all of them.
  [[nodiscard]] bool wait_for_subscribers(std::size_t count, std::chrono::nanoseconds timeout) const;

  Endpoint local_endpoint() const;
  PublishStats stats() const noexcept;
  /// The pool the high-throughput data connections draw from (its pages_in_use() tells the
  /// memory held for subscribers).
  const PagePool& pages() const noexcept;
  /// The connection manager's counters of the data connections of `mode` (opened, torn down,
  /// re-opened, open now and at the peak, ...): with max_connections set. Without a limit
  /// there is no manager and every counter is 0 (stats().connections counts them).
  ConnectionStats connection_stats(Mode mode) const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// publish() for one thread: what PublishSocket::publish() does, without the lock and the
/// reference count that call takes on the routes for every message. A Publisher keeps the
/// routes it last used and takes them again when a subscription changed them (an atomic load
/// tells), so every subscriber acknowledged before a publish() gets it, as with the socket's.
/// Thread-safety: one thread at a time per Publisher; each publishing thread takes its own,
/// and any number of Publishers and PublishSocket::publish() callers run at once (one
/// Publisher's messages keep their order for every subscriber).
/// Lifetime: destroy before the Context. It may outlive its PublishSocket: publish() then
/// throws Errc::closed. Until its next publish() it holds the routes of its last one, and so
/// the data connections of subscribers that left since (closed, not yet freed).
class PublishSocket::Publisher {
 public:
  Publisher(Publisher&&) noexcept;
  Publisher& operator=(Publisher&&) noexcept;
  ~Publisher();

  /// As PublishSocket::publish() and try_publish(); Errc::closed once the PublishSocket is
  /// destroyed.
  void publish(Tag tag, std::span<const std::byte> data);
  bool try_publish(Tag tag, std::span<const std::byte> data, PublishProgress& progress);

 private:
  friend class PublishSocket;
  explicit Publisher(std::shared_ptr<Impl> impl);
  struct Kept;
  std::unique_ptr<Kept> kept_;
};

}  // namespace netio::pubsub
