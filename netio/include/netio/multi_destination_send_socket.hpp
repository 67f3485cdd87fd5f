// SPDX-License-Identifier: MIT
/// @file
/// A send socket to many receivers: send(endpoint, data) to any of them, over connections
/// opened on first use and, under a connection limit, torn down again (on-demand connection
/// management with one-sided tear-down, as in the Advanced Connection Tear-down Schemes
/// (ACTS) for Global Arrays/ARMCI).
///
/// Each destination gets a LowLatencySendSocket or a HighThroughputSendSocket (options.mode)
/// of its own, opened when the first message to it is sent. With max_connections set, at
/// most that many are open at once (connections being torn down count until their close
/// ends). When a message needs a connection and none is free, a victim is chosen by
/// options.policy (LRU or LRU-M, socket_options.hpp) among the connections nobody is
/// sending on right now, and torn down one-sidedly: its queued messages (a high-throughput
/// socket's partly filled page included) go out, their completions are awaited, then it
/// closes, and only then does the new connection open in its place. Every connection closes
/// with close_awaits_receiver (low_latency_socket.hpp): where the back-end can tell (TCP),
/// the close ends once the receiver has read everything, so a re-opened connection is read
/// after the old one's last message, and a close (tear-down, disconnect(), close_and_wait()) waits up
/// to the connection's send_timeout for a receiver whose user does not read.
///
/// Nothing queued is lost to a tear-down: a message to a destination whose connection is
/// being torn down waits for that close and then for a re-connect. A destination that cannot
/// be reached (refused, rejected, vanished) fails only the messages to it: the send that
/// finds the failure throws it, naming the destination; options.on_peer_failed hears of it
/// once per failure; for failed_peer_retry afterwards sends to it throw at once, then the
/// next send tries to connect again. Messages that were queued in the failed connection
/// are lost with it (the underlying socket's semantics).
///
/// Thread-safety: send(), try_send(), flush(), stats() and connection_stats() from any
/// number of threads, user threads and the event-loop thread alike. Messages from one thread
/// to one destination keep their order. On the event-loop thread nothing waits: send() that
/// would have to wait (for a connection slot, a tear-down, a free buffer) throws
/// Errc::would_block; try_send() returns false instead and, when a connection was needed,
/// has started the tear-down and re-connect, so a later try_send() goes through.
/// High-throughput mode with a limit: unless options.high_throughput.shared_pages is given,
/// the connections draw their pages from a pool of the socket's own, sized by the limit
/// (max_connections × high_throughput.page_count pages of page_size, allocated as first
/// used; each connection holds at most page_count of them, as with a pool of its own). A
/// torn-down connection's pages go back to it for the next one, so the pages held follow
/// the connections open at once, not every destination ever used. One such pool per
/// endpoint scheme (a pool serves one back-end).
/// Lifetime: destroy before the Context. On a user thread the destructor closes every
/// connection after what was sent went out (waiting up to send_timeout in all); on the loop
/// thread it starts those closes and returns.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/error.hpp"
#include "netio/socket_options.hpp"
#include "netio/stats.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

namespace netio {

class Context;        // netio/context.hpp
class ReceiveBudget;  // netio/receive_budget.hpp

/// What a send_parts() call may wait for (on user threads; on the event-loop thread it waits
/// for nothing).
enum class SendWait {
  nothing,              ///< as try_send()
  connection,           ///< for the destination's connection (tear-downs, a re-connect), not for room in it
  connection_and_room,  ///< as send()
};

/// What send_parts() did.
enum class SendOutcome {
  sent,           ///< the message is queued in the destination's connection
  no_room,        ///< the connection is there, but its buffers (pages) are all in flight now
  no_connection,  ///< the connection is being made (or a victim is being torn down for it, or
                  ///< every open connection is busy sending): it was started, try again later
};

/// Counters of the connection manager. Relaxed snapshot, cheap to read.
struct ConnectionStats {
  std::uint64_t opened = 0;     ///< connections opened (first opens and re-opens)
  std::uint64_t reopened = 0;   ///< of which to a destination that had been open before
  std::uint64_t torn_down = 0;  ///< connections closed by the policy to make room (victims)
  std::uint64_t failed = 0;     ///< connections that failed (refused, vanished, lost messages)
  std::uint64_t open = 0;       ///< connections open now (tear-downs in progress included)
  std::uint64_t peak_open = 0;  ///< the most open at once
  /// Send-buffer memory of the open connections: buffers and pages allocated by their pools
  /// (registered with the back-end where it needs that), now and at the peak; in
  /// high-throughput mode with a limit, the socket's own page pool (above), counted whole:
  /// every page it allocated, in use or free. Pages of a pool given in
  /// HighThroughputSendOptions::shared_pages are that pool's and not counted.
  std::uint64_t connection_bytes = 0;
  std::uint64_t peak_connection_bytes = 0;
};

class MultiDestinationSendSocket {
 public:
  /// Opens nothing yet. Throws netio::Error(Errc::invalid_option) for contradictory options.
  explicit MultiDestinationSendSocket(Context& context, MultiDestinationSendOptions options = {});
  ~MultiDestinationSendSocket();
  MultiDestinationSendSocket(const MultiDestinationSendSocket&) = delete;
  MultiDestinationSendSocket& operator=(const MultiDestinationSendSocket&) = delete;

  /// Sends `message` to `destination` (a receive socket of the mode's kind), opening the
  /// connection (and tearing down a victim) when needed. Throws netio::Error: the
  /// destination's failure (naming it), Errc::timeout (no connection within send_timeout, or
  /// no free buffer), Errc::would_block (on the loop thread, see above), Errc::closed (after
  /// close() or close_and_wait()), Errc::message_too_large.
  void send(const Endpoint& destination, std::span<const std::byte> message);
  /// As send(), but false instead of waiting (for a connection, a tear-down or a buffer).
  bool try_send(const Endpoint& destination, std::span<const std::byte> message);
  /// The general form of send() and try_send(): the message is the concatenation of `parts`
  /// (a header and a payload, say; not joined first), and `wait` says what may be waited for
  /// (up to send_timeout; Errc::timeout after it). On the event-loop thread nothing waits
  /// and nothing throws Errc::would_block: the outcome says what was missing. Throws as send().
  SendOutcome send_parts(const Endpoint& destination, std::span<const std::span<const std::byte>> parts, SendWait wait);
  /// Makes the connection to `destination` without sending anything (a victim is torn down
  /// first when at the limit). Never waits: true once the connection is up (its handshake
  /// done), false while it is being made; call again to follow it. Throws the destination's
  /// failure, naming it, as send() does.
  bool try_connect(const Endpoint& destination);
  /// For a receiver that went away: closes its connection (what is queued goes out first,
  /// as at a tear-down; a connection with a sender inside, or still being made, closes when
  /// that is over) and forgets its failure. A later send connects again. Never waits.
  void disconnect(const Endpoint& destination);
  /// For a receiver known to be gone (its process died, say): its connection closes now,
  /// dropping what is queued for it, and sends to it (waiting ones included) throw
  /// Errc::closed naming it and `reason`, as after a failure (for failed_peer_retry, or
  /// until disconnect() forgets it); not counted as a failure. Never waits.
  void abort(const Endpoint& destination, std::string_view reason);
  /// High-throughput mode: sends the partly filled page of every open connection now.
  void flush();
  /// The asynchronous close, from any thread; never waits. Sends from now on throw
  /// Errc::closed. Every connection closes after what was sent to it went out (each within
  /// send_timeout); connections still being made close as they come up. Once all have
  /// closed, `on_closed` runs on the event-loop thread: with nullptr when every message was
  /// handed to the network, else with the first close that lost messages, naming its
  /// destination. Calling it again only adds its on_closed. The socket may be destroyed at
  /// any time after the call (the closes go on); a close still in progress when the Context
  /// stops ends there, and its on_closed does not run.
  void close(std::function<void(const Error*)> on_closed = {});
  /// close() and wait for it (user threads; on the loop thread it only starts the closes):
  /// a close that waits says so in its name (docs/design/conventions.md). Throws
  /// netio::Error: Errc::timeout when connections are still closing after send_timeout
  /// (logged), or the error of the first close that lost messages, naming its destination.
  /// Idempotent: a later call throws again what went wrong.
  void close_and_wait();

  ConnectionStats connection_stats() const;
  /// Messages and bytes sent through this socket (the other SocketStats counters are those
  /// of the connections themselves and not summed here).
  SocketStats stats() const noexcept;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace netio
