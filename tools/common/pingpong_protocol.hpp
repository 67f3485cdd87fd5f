// What netio_pingpong's client and server say to each other.
//
// netio connections go one way (send socket → receive socket), so a round trip needs two:
//   1. the client listens on a LowLatencyReceiveSocket (port 0), connects to the server and
//      sends HELLO(a = its listening port, b = session id, c = ping size);
//   2. the server connects back to (the HELLO's peer host, that port) and sends
//      WELCOME(a = session id);
//   3. pings: the client sends a message of the ping size, the server echoes its bytes;
//   4. the client sends GOODBYE(a = session id, b = pings done) and waits briefly for
//      GOODBYE_ACK(a = session id). A new HELLO replaces the previous client, so a client
//      that vanished without GOODBYE does not block the next one.
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
  // Throws std::invalid_argument for size 0.
  explicit PingMessage(std::size_t size);
  std::span<const std::byte> stamp(std::uint64_t sequence) noexcept;
  // Whether `reply` is the echo of the ping last stamped with `sequence`.
  bool is_echo_of(std::span<const std::byte> reply, std::uint64_t sequence) const noexcept;
  std::size_t size() const noexcept { return buffer_.size(); }

 private:
  std::vector<std::byte> buffer_;
};

}  // namespace netio::tools
