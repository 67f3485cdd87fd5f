// SPDX-License-Identifier: MIT
// What netio_pingpong's client and server say to each other.
//
// By default pings and pongs share one connection: the pongs are replies (Peer::try_reply).
//   1. the client connects to the server and sends HELLO(a = 0, b = session id, c = ping size);
//   2. the server answers WELCOME(a = session id);
//   3. pings: the client sends a message of the ping size, the server echoes its bytes;
//   4. the client sends GOODBYE(a = session id, b = pings done) and waits briefly for
//      GOODBYE_ACK(a = session id).
// The server serves any number of clients at once, each known by its connection; a client
// that vanishes without GOODBYE is forgotten when its connection drops.
// With --two-connections (netio's shape before replies, kept so both can be measured) the
// client also listens on a LowLatencyReceiveSocket (port 0) and its HELLO carries that port
// in `a`; the server connects back to (the HELLO's source host, that port) and sends WELCOME,
// pongs and GOODBYE_ACK there.
// HELLO, WELCOME, GOODBYE and GOODBYE_ACK are control frames (control_frame.hpp). A ping of
// 8 bytes or more starts with its sequence number (bit 63 clear, so never a frame); a ping
// of 1..7 bytes holds the low bytes of its sequence number and is too short to be a frame.
// The rest of a ping is a fixed pattern.
#pragma once

#include "control_frame.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace netio::tools {

// A ping buffer built once; stamp() writes the sequence number in place.
class PingMessage {
 public:
  // Throws netio::Error (Errc::invalid_option) for size 0.
  explicit PingMessage(std::size_t size);
  std::span<const std::byte> stamp(std::uint64_t sequence) noexcept;
  // Whether `reply` is the echo of the ping last stamped with `sequence`.
  bool is_echo_of(std::span<const std::byte> reply, std::uint64_t sequence) const noexcept;
  std::size_t size() const noexcept { return buffer_.size(); }

 private:
  std::vector<std::byte> buffer_;
};

}  // namespace netio::tools
