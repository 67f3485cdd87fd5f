// SPDX-License-Identifier: MIT
/// @file
/// High-throughput sockets: messages are batched into pages, each message framed as an
/// 8-byte little-endian length followed by its bytes; a page is sent when full, when the
/// flush timer fires, or on flush(). Received pages are queued and parsed lazily by recv()
/// on the user's thread.
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
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace netio {

class Context;        // netio/context.hpp
class ReceiveBudget;  // netio/receive_budget.hpp

/// Connects to a HighThroughputReceiveSocket.
///
/// Back-pressure: pages come from a bounded pool. When every page is in flight (a slow or
/// stalled receiver), send() waits up to send_timeout and then throws Errc::timeout;
/// try_send() returns false instead. send() takes all the pages a message needs before it
/// writes any, so after a timeout nothing of the message was queued and the connection is
/// intact. A message larger than the whole pool streams through it page by page; if that
/// times out half-way, the connection is closed rather than left with a torn message.
/// Large messages: send() of a message of at least zero_copy_threshold bytes puts only its
/// length into the current page, sends that page, then lends the message's own memory to
/// the back-end in frames of at most a page (as filled: see page_size) and returns once the
/// back-end has taken them (like a blocking write). The receiver sees the same stream as if the message had been
/// copied. That saves the copy and, more, keeps the bytes the kernel reads hot in the cache. It needs a back-end that
/// sends unregistered memory (POSIX, libfabric without FI_MR_LOCAL) and a connected socket; otherwise, from the loop
/// thread and in try_send() the message is copied as usual. If it times out half-way, the connection is closed.
/// Thread-safety: every method may be called from any number of threads, user threads and
/// the event-loop thread (inside any callback) alike; a message stays whole and messages
/// from one thread keep their order. The send path costs a lock and a copy: no heap
/// allocation and no system call per message. The socket may be created and destroyed on
/// either kind of thread.
/// On the event-loop thread nothing waits (pages come back on that very thread): send() of
/// a message that does not fit in the free pages now throws Errc::would_block at once
/// (use try_send() there); messages are always copied there; flush_and_wait() and
/// wait_connected() always throw Errc::would_block there (use flush(), or close(on_closed)).
/// Lifetime: destroy before the Context. On a user thread the destructor is a blocking
/// close: it flushes, waits up to send_timeout for the pages to be sent (logging what was
/// lost), then closes; a socket still retrying its connection drops them at once instead. On the event-loop thread it
/// waits for nothing: it starts close() and returns; the connection lives on inside netio until its close ends
/// (everything sent, the connection failed, or send_timeout passed). A close still in progress when the Context stops
/// ends there, dropping what is unsent.
class HighThroughputSendSocket {
 public:
  HighThroughputSendSocket(Context& context, const Endpoint& remote, HighThroughputSendOptions options = {});
  ~HighThroughputSendSocket();
  HighThroughputSendSocket(const HighThroughputSendSocket&) = delete;
  HighThroughputSendSocket& operator=(const HighThroughputSendSocket&) = delete;

  /// As LowLatencySendSocket::wait_connected(): true once connected, false on timeout.
  [[nodiscard]] bool wait_connected(std::chrono::nanoseconds timeout);
  bool connected() const noexcept;
  /// The error the connection failed with (refused, rejected, lost), if it did; from any
  /// thread, without waiting or throwing.
  std::optional<Error> failure() const;

  /// Copies the message into pages (splitting it across pages when it does not fit).
  /// Throws netio::Error: Errc::timeout, Errc::message_too_large, Errc::would_block (on the
  /// event-loop thread: see above), Errc::closed (after close()), or the connection's error.
  void send(std::span<const std::byte> message);
  /// False, with nothing written, when the message does not fit in the free pages now.
  /// Throws Errc::message_too_large for a message larger than the whole pool.
  bool try_send(std::span<const std::byte> message);
  /// As send() and try_send(), for the message that is the concatenation of `parts` (a
  /// header and a payload, say): packed into pages without being joined first.
  void send_parts(std::span<const std::span<const std::byte>> parts);
  bool try_send_parts(std::span<const std::span<const std::byte>> parts);
  /// Sends the partly filled page now.
  void flush();
  /// flush(), then waits until every page handed to the back-end has completed: true, or
  /// false on timeout. Throws the connection's error if pages were lost to it;
  /// Errc::would_block on the event-loop thread.
  [[nodiscard]] bool flush_and_wait(std::chrono::nanoseconds timeout);
  /// The next reply from the receiver (Peer::try_reply on its side); as
  /// LowLatencySendSocket::recv_reply().
  std::optional<Message> recv_reply(std::chrono::nanoseconds timeout);
  /// The asynchronous close, from any thread; never waits. Sends from now on throw
  /// Errc::closed. The partly filled page and every page before it go out; once the
  /// back-end has completed all of them (or the connection failed, or send_timeout passed)
  /// the connection closes and `on_closed` runs on the event-loop thread: with nullptr when
  /// every message was handed to the network, else with what went wrong. Calling it again
  /// only adds its on_closed. The socket object may be destroyed at any time after the call.
  void close(std::function<void(const Error*)> on_closed = {});
  /// The close for a receiver known to be gone (its process died, say), from any thread:
  /// the connection closes now and what is queued is dropped, not flushed. A send waiting
  /// for a page (on any thread) fails at once, and every send from now on throws, with
  /// Errc::closed naming the receiver and `reason`. The socket object may be destroyed at any
  /// time after the call.
  void abort(std::string_view reason);

  const Endpoint& remote() const noexcept;
  SocketStats stats() const noexcept;
  /// Bytes of pages this socket's own pool allocated so far (pages are allocated as first
  /// used and then kept); 0 with shared_pages, whose PagePool counts them. Any thread.
  std::size_t buffer_bytes() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// Listens for HighThroughputSendSockets (any number; messages of one sender keep their
/// order). Every message carries its Peer (Message::peer(), recv_each's handler), which
/// answers the sender on the same connection (Peer::try_reply). A sender sending a length
/// beyond max_message_size, a truncated page or junk is disconnected with a logged reason;
/// other senders are not disturbed.
/// Thread-safety: recv()/try_recv() from any threads (each message goes to one caller). On
/// the event-loop thread recv() and recv_each() wait for nothing (pages arrive on that very
/// thread): they take only what is already queued, as with a zero timeout.
/// Lifetime: destroy before the Context, on any thread, also inside a callback on the
/// event-loop thread (ConnectionEvents included). Messages taken out stay valid after it.
class HighThroughputReceiveSocket {
 public:
  HighThroughputReceiveSocket(Context& context, const Endpoint& local, HighThroughputReceiveOptions options = {});
  ~HighThroughputReceiveSocket();
  HighThroughputReceiveSocket(const HighThroughputReceiveSocket&) = delete;
  HighThroughputReceiveSocket& operator=(const HighThroughputReceiveSocket&) = delete;

  /// The next message, waiting up to `timeout`; std::nullopt on timeout. A message that
  /// spanned pages and was reassembled owns its memory; destroyed (on any thread, also after
  /// the socket), it leaves that memory to the socket for its next reassembly.
  std::optional<Message> recv(std::chrono::nanoseconds timeout);
  std::optional<Message> try_recv();

  /// Returns false to stop the batch after this message. `peer` is the connection the
  /// message came from (copy it to keep it).
  using PeerVisitor = std::function<bool(std::span<const std::byte> message, const Peer& peer)>;
  using Visitor = std::function<bool(std::span<const std::byte> message)>;
  /// The batch form, for small messages: hands up to `max` messages to `handler` on the
  /// calling thread, waiting up to `timeout` for the first and taking the rest only if they
  /// are already there. Each view is valid during the call only (nothing keeps its page
  /// alive afterwards); one consumer turn serves the whole batch. Returns how many messages
  /// the handler was given. If the handler throws, the message it was given counts as
  /// received and the exception propagates.
  std::size_t recv_each(std::size_t max, std::chrono::nanoseconds timeout, const PeerVisitor& visitor);
  std::size_t recv_each(std::size_t max, std::chrono::nanoseconds timeout, const Visitor& visitor);

  Endpoint local_endpoint() const;
  SocketStats stats() const noexcept;
  /// The memory budget this socket counts against (its own, or options.shared_budget).
  const ReceiveBudget& memory_budget() const noexcept;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace netio
