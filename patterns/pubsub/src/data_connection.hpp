// The publisher's data connection to one subscriber in one mode: a low-latency or a
// high-throughput send socket, the subscriber it goes to, and who asked for it (the control
// connection whose subscriptions it serves).
//
// Thread-safety: try_deliver()/deliver() from any thread (the socket's own rules apply);
// close() and the tag set on the loop thread only. A DataConnection may outlive its close
// (a publish() on another thread may still hold it): delivering then reports `gone`.
#pragma once

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/peer.hpp"
#include "netio/pubsub/subscription.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>

namespace netio::pubsub::detail {

enum class Delivery { sent, full, gone };

class DataConnection {
 public:
  // Without sockets: for the subscription table's unit tests (every delivery is `gone`).
  DataConnection(SubscriberInfo subscriber, Peer control);
  DataConnection(SubscriberInfo subscriber, Peer control, std::unique_ptr<LowLatencySendSocket> socket);
  DataConnection(SubscriberInfo subscriber, Peer control, std::unique_ptr<HighThroughputSendSocket> socket);
  ~DataConnection();

  const SubscriberInfo& subscriber() const noexcept { return subscriber_; }
  ConnectionId owner() const noexcept { return control_.connection(); }
  const Peer& control() const noexcept { return control_; }

  // Never waits: `full` when the subscriber's buffers (or its share of the page pool) are
  // all in flight now.
  Delivery try_deliver(std::span<const std::span<const std::byte>> frame);
  // Waits up to the socket's send_timeout on a user thread; throws Errc::timeout after it
  // (nothing of the message queued). On the loop thread it is try_deliver().
  Delivery deliver(std::span<const std::span<const std::byte>> frame);
  void flush();
  bool connected() const noexcept;
  std::optional<Error> failure() const;  // the socket's, if its connection failed
  // Starts the asynchronous close (what is queued goes out); deliveries report `gone` from now on.
  void close();
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

  SubscriberInfo subscriber_;
  Peer control_;
  std::unique_ptr<LowLatencySendSocket> low_latency_;
  std::unique_ptr<HighThroughputSendSocket> high_throughput_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> failure_logged_{false};
  std::set<Tag> tags_;
  std::chrono::steady_clock::time_point opened_at_ = std::chrono::steady_clock::now();
};

}  // namespace netio::pubsub::detail
