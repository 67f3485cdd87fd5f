// SPDX-License-Identifier: MIT
/// @file
/// Low-latency sockets: no batching. A message is handed to the back-end as soon as send()
/// is called, and each received message is passed to a callback on the event-loop thread.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/error.hpp"
#include "netio/message.hpp"
#include "netio/peer.hpp"
#include "netio/socket_options.hpp"
#include "netio/stats.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace netio {

class Context;        // netio/context.hpp
class ReceiveBudget;  // netio/receive_budget.hpp

/// Connects to a LowLatencyReceiveSocket. Construction starts connecting and returns at
/// once; messages sent before the connection is up wait in the socket's buffers. Nobody
/// listening yet is no error: it tries again until connect_timeout (netio/socket_options.hpp).
///
/// Thread-safety: every method may be called from any number of threads at once, user
/// threads and the event-loop thread (inside any callback) alike; each message stays whole
/// and messages from one thread keep their order. The socket may also be created and
/// destroyed on either.
/// On the event-loop thread nothing waits (buffers come back, and the connection comes up,
/// on that very thread): send() with every buffer in flight throws Errc::would_block at
/// once (use try_send() there); wait_connected() and wait_sent() always throw
/// Errc::would_block there (use connected(), or close(on_closed) to learn when everything
/// was sent). send() there goes straight to the back-end without a thread switch.
/// Lifetime: destroy before the Context. On a user thread the destructor is a blocking
/// close: it sends what is queued, waits up to send_timeout for the back-end to complete it
/// (logging what was lost), then closes; a socket still retrying its connection (an attempt
/// failed, netio/socket_options.hpp) drops what is queued at once instead. On the event-loop thread it waits for
/// nothing: it starts close() and returns; the connection lives on inside netio until its close ends (everything sent,
/// the connection failed, or send_timeout passed). A close still in progress when the Context stops ends there,
/// dropping what is unsent.
class LowLatencySendSocket {
 public:
  LowLatencySendSocket(Context& context, const Endpoint& remote, LowLatencySendOptions options = {});
  ~LowLatencySendSocket();
  LowLatencySendSocket(const LowLatencySendSocket&) = delete;
  LowLatencySendSocket& operator=(const LowLatencySendSocket&) = delete;

  /// Waits until the receiver accepted the connection: true, or false on timeout (the socket
  /// keeps trying). Throws netio::Error when it was rejected, or not accepted within
  /// connect_timeout (Errc::timeout); Errc::would_block on the event-loop thread.
  [[nodiscard]] bool wait_connected(std::chrono::nanoseconds timeout);
  bool connected() const noexcept;
  /// The error the connection failed with (refused, rejected, lost), if it did; from any
  /// thread, without waiting or throwing.
  std::optional<Error> failure() const;

  /// Copies `message` into a send buffer and hands it to the back-end. Throws netio::Error:
  /// Errc::message_too_large (beyond what the receiver accepts), Errc::timeout (no buffer
  /// freed up within send_timeout), Errc::would_block (on the event-loop thread, with every
  /// buffer in flight: see above), Errc::closed (after close()), or the connection's error
  /// once it failed.
  void send(std::span<const std::byte> message);
  /// As send(), but returns false instead of waiting when every buffer is in flight.
  bool try_send(std::span<const std::byte> message);
  /// As send() and try_send(), for the message that is the concatenation of `parts` (a
  /// header and a payload, say): copied into the send buffer part by part.
  void send_parts(std::span<const std::span<const std::byte>> parts);
  bool try_send_parts(std::span<const std::span<const std::byte>> parts);
  /// Waits until every message sent so far was handed to the network: true, or false on
  /// timeout. Throws the connection's error if messages were lost to it; Errc::would_block
  /// on the event-loop thread.
  [[nodiscard]] bool wait_sent(std::chrono::nanoseconds timeout);
  /// The asynchronous close, from any thread; never waits. Sends from now on throw
  /// Errc::closed. What was sent before goes out; once the back-end has completed all of it
  /// (or the connection failed, or send_timeout passed) the connection closes and
  /// `on_closed` runs on the event-loop thread: with nullptr when every message was handed
  /// to the network, else with what went wrong. Calling it again only adds its on_closed.
  /// The socket object may be destroyed at any time after the call (the close goes on).
  void close(std::function<void(const Error*)> on_closed = {});
  /// The close for a receiver known to be gone, from any thread: the connection closes now
  /// and what is queued is dropped. A send waiting for a buffer (on any thread) fails at
  /// once, and every send from now on throws, with Errc::closed naming the receiver and
  /// `reason`. The socket object may be destroyed at any time after the call.
  void abort(std::string_view reason);

  /// The next reply from the receiver (Peer::try_reply on its side), waiting up to `timeout`;
  /// std::nullopt on timeout or once the connection is gone and no reply is left. Holding the
  /// Message holds a reply credit (ReplyOptions::credits). Any thread; throws Errc::closed
  /// when replies go to ReplyOptions::on_reply instead.
  std::optional<Message> recv_reply(std::chrono::nanoseconds timeout);

  const Endpoint& remote() const noexcept;
  SocketStats stats() const noexcept;
  /// Bytes of send buffers allocated so far (registered with the back-end where it needs
  /// that): buffers are allocated as first used and then kept. Any thread.
  std::size_t buffer_bytes() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// Listens for LowLatencySendSockets; calls `handler` for every message on the event-loop
/// thread, with the Peer it came from (connection id, declared identity; peer.try_reply()
/// answers on the same connection). The view passed to the handler is valid during the call
/// only: copy what you keep (a Peer may be copied and kept). The handler must not block for
/// long (it holds up the whole loop).
/// Thread-safety: local_endpoint() and stats() from any thread.
/// Lifetime: destroy before the Context, on any thread, also inside any callback on the
/// event-loop thread, this socket's own handler and ConnectionEvents included. No handler
/// or event runs once the destructor has returned. On the event-loop thread the destructor
/// closes the listener and the connections at once and frees what may still be on the
/// stack in a later loop task.
class LowLatencyReceiveSocket {
 public:
  /// The push handler: called for every message (a Peer, not its address: Peer::address()).
  using Handler = std::function<void(std::span<const std::byte> message, const Peer& peer)>;

  /// Binds and listens; throws netio::Error if the endpoint cannot be bound,
  /// Errc::invalid_option for an empty handler.
  LowLatencyReceiveSocket(Context& context, const Endpoint& local, Handler handler,
                          LowLatencyReceiveOptions options = {});
  ~LowLatencyReceiveSocket();
  LowLatencyReceiveSocket(const LowLatencyReceiveSocket&) = delete;
  LowLatencyReceiveSocket& operator=(const LowLatencyReceiveSocket&) = delete;

  /// The bound endpoint (the real port when constructed with port 0).
  Endpoint local_endpoint() const;
  SocketStats stats() const noexcept;
  /// The memory budget this socket counts against (its own, or options.shared_budget).
  const ReceiveBudget& memory_budget() const noexcept;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace netio
