// SPDX-License-Identifier: MIT
// The publisher's data connection to one subscriber in one mode: a low-latency or a
// high-throughput send socket of its own, or, under a connection limit, a destination of the
// publisher's MultiDestinationSendSocket of that mode (the subscriber's data endpoint); the
// subscriber it goes to, and who asked for it (the control connection whose subscriptions
// it serves).
//
// Thread-safety: the deliveries from any thread (the socket's own rules apply); close(),
// connect() and the tag set on the loop thread only. A DataConnection may outlive its close
// (a publish() on another thread may still hold it): delivering then reports `gone`.
#pragma once

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/multi_destination_send_socket.hpp"
#include "netio/peer.hpp"
#include "netio/pubsub/subscription.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string_view>

namespace netio::pubsub::detail {

enum class Delivery {
  sent,
  full,          // no room now (the subscriber's buffers, or its share of the pool, are in flight)
  reconnecting,  // its connection was torn down by the limit and is being made again: later
  gone,          // the subscriber is gone (its connection failed); skipped
};

class DataConnection {
 public:
  // Without sockets: for the subscription table's unit tests (every delivery is `gone`).
  DataConnection(SubscriberInfo subscriber, Peer control);
  DataConnection(SubscriberInfo subscriber, Peer control, std::unique_ptr<LowLatencySendSocket> socket);
  DataConnection(SubscriberInfo subscriber, Peer control, std::unique_ptr<HighThroughputSendSocket> socket);
  // Under a connection limit: the destination subscriber.endpoint of `connections`.
  DataConnection(SubscriberInfo subscriber, Peer control, std::shared_ptr<MultiDestinationSendSocket> connections);
  ~DataConnection();

  const SubscriberInfo& subscriber() const noexcept { return subscriber_; }
  bool under_limit() const noexcept { return limited_ != nullptr; }
  ConnectionId owner() const noexcept { return control_.connection(); }
  const Peer& control() const noexcept { return control_; }

  // Never waits: `full` when the subscriber's buffers (or its share of the page pool) are
  // all in flight now, `reconnecting` when its connection is being made again.
  Delivery try_deliver(std::span<const std::span<const std::byte>> frame);
  // Waits up to the socket's send_timeout on a user thread (for room, and for a re-connect);
  // throws Errc::timeout after it (nothing of the message queued). On the loop thread it
  // waits for nothing: `full` or `reconnecting` then (or Errc::would_block from a socket of
  // its own, as before).
  Delivery deliver(std::span<const std::span<const std::byte>> frame);
  // For Backpressure::drop: waits for a re-connect (user threads, up to send_timeout), never
  // for room: `full` when there is none now.
  Delivery deliver_or_full(std::span<const std::span<const std::byte>> frame);
  // The partly filled page (a socket of its own; under a limit the publisher flushes them all).
  void flush();
  // Whether the connection is up, making it (again) when it is not. Never waits; a failure
  // is kept (failure()).
  bool connect();
  std::optional<Error> failure() const;  // the socket's, if its connection failed
  // Starts the asynchronous close (what is queued goes out); deliveries report `gone` from now on.
  void close();
  // For a subscriber known to be gone (its control connection dropped): the connection
  // closes now, dropping what is queued for it, and deliveries waiting for its room (on any
  // thread) report `gone` at once instead of waiting out send_timeout. Never waits.
  void abort(std::string_view reason);
  // The blocking close, for a user thread when the publisher goes: what is queued goes out
  // (waiting up to the socket's send_timeout), then the connection closes. Nobody else may
  // be delivering on this connection.
  void close_and_wait();
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  // Loop thread only: the tags this connection carries.
  std::set<Tag>& tags() noexcept { return tags_; }
  // Loop thread only: when it was opened, for the connect timeout.
  std::chrono::steady_clock::time_point opened_at() const noexcept { return opened_at_; }

 private:
  template <typename Send>
  Delivery guarded(Send send);
  Delivery through_limit(std::span<const std::span<const std::byte>> frame, SendWait wait);
  void gone(const Error& e);
  // Under a limit: deliveries in progress, so that close() disconnects the destination only
  // once nobody sends to it (else a late delivery would connect it again).
  bool enter();
  void leave();
  struct Active {  // leave() on every way out
    explicit Active(DataConnection& c) : connection(c) {}
    ~Active() { connection.leave(); }
    Active(const Active&) = delete;
    Active& operator=(const Active&) = delete;
    DataConnection& connection;
  };

  SubscriberInfo subscriber_;
  Peer control_;
  std::unique_ptr<LowLatencySendSocket> low_latency_;
  std::unique_ptr<HighThroughputSendSocket> high_throughput_;
  std::shared_ptr<MultiDestinationSendSocket> limited_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> failure_logged_{false};
  mutable std::mutex limited_mutex_;  // guards the three below
  std::size_t active_ = 0;
  bool disconnected_ = false;
  std::optional<Error> failure_;
  std::set<Tag> tags_;
  std::chrono::steady_clock::time_point opened_at_ = std::chrono::steady_clock::now();
};

}  // namespace netio::pubsub::detail
