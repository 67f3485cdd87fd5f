// SPDX-License-Identifier: MIT
/// @file
/// Who is on the other end of a connection, and how to answer it.
///
/// Every connection a receive socket accepts gets a Peer: a connection id (unique in the
/// process, stable for the connection's life), the address it came from, and the identity its
/// sender declared (Identity: a name and, optionally, an endpoint where it can be reached).
/// Handlers, high-throughput messages and ConnectionEvents all carry it, and a Peer answers its
/// sender with replies on the same connection: no second connection, no handshake of your own.
///
/// Thread-safety: a Peer is a small handle (a shared pointer) to the connection's state;
/// copy it to keep it, use it on any thread. The state lives as long as some Peer or message
/// refers to it; after the connection is gone, identity stays readable and replies fail.
#pragma once

#include "netio/endpoint.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace netio {

using ConnectionId = std::uint64_t;

/// What a sender declares about itself when it connects.
struct Identity {
  /// Empty: "HOST:PID" of the sending process. At most 255 bytes of printable UTF-8 (no
  /// control characters, netio/printable.hpp): a send socket with another name throws, a
  /// receiver disconnects a sender that declares one (the introduction is refused).
  std::string name;
  std::optional<Endpoint> endpoint;  ///< where the sender can be reached, if it says
};

/// The replies a send socket takes from its receiver (Peer::try_reply on the other side).
struct ReplyOptions {
  /// Called on the event-loop thread for each reply, in order; the view is valid during the
  /// call only. Unset: replies queue for the send socket's recv_reply().
  std::function<void(std::span<const std::byte> reply)> on_reply;
  std::size_t max_size = 4 * 1024;  ///< larger replies are refused at the replier
  /// Replies received and not yet handed to the caller, at most: beyond that the connection
  /// stops taking replies, and the replier's try_reply() returns false.
  std::size_t credits = 8;
};

namespace detail {
struct PeerState;
}

class Peer {
 public:
  Peer() = default;
  explicit Peer(std::shared_ptr<const detail::PeerState> state) noexcept : state_(std::move(state)) {}

  /// False for a default-constructed Peer (a message that did not come from a connection).
  explicit operator bool() const noexcept { return state_ != nullptr; }

  ConnectionId connection() const noexcept;
  const Endpoint& address() const noexcept;  ///< the connection's source address (an ephemeral port)
  const Identity& identity() const noexcept;
  const std::string& name() const noexcept { return identity().name; }
  /// "NAME (ADDRESS)", for messages and logs, passed through netio::printable() (a name
  /// is printable already; this holds whatever the bytes).
  std::string to_string() const;

  /// Sends `message` back to this peer on its connection, after the replies before it; any
  /// thread. False, with nothing sent, when the replies already queued to this peer fill its
  /// window (the peer is not taking its replies: back-pressure). Throws netio::Error:
  /// Errc::message_too_large beyond what the peer takes (its ReplyOptions::max_size; a peer
  /// that takes no replies takes 0 bytes), Errc::disconnected once the connection is gone.
  bool try_reply(std::span<const std::byte> message) const;
  /// As try_reply(), but waits up to `timeout` for room on a user thread (Errc::timeout after
  /// it). On the event-loop thread it cannot wait (room is made there): it throws
  /// Errc::would_block at once when there is none; use try_reply() there.
  void reply(std::span<const std::byte> message, std::chrono::nanoseconds timeout = std::chrono::seconds(10)) const;

  friend bool operator==(const Peer& a, const Peer& b) noexcept { return a.state_ == b.state_; }

 private:
  std::shared_ptr<const detail::PeerState> state_;
};

}  // namespace netio
