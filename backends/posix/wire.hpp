// The POSIX back-end's wire format. TCP is a byte stream, so every buffer travels as a
// frame: an 8-byte little-endian length, then the bytes. A connection opens with
//   connector -> listener : frame(hello)                  (at most max_handshake_frame bytes)
//   listener  -> connector: frame(reply)
// where reply = u8 accepted, u64 max_buffer_size, then the reject reason (UTF-8).
// After the reply, frames flow from connector to listener only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace netio::posix {

constexpr std::size_t frame_header_size = 8;
constexpr std::size_t max_handshake_frame = 4096;

struct HandshakeReply {
  bool accepted = false;
  std::uint64_t max_buffer_size = 0;
  std::string reason;
};

std::vector<std::byte> encode_frame(std::span<const std::byte> payload);
std::vector<std::byte> encode_reply(const HandshakeReply& reply);
// std::nullopt when the bytes are not a well-formed reply.
std::optional<HandshakeReply> decode_reply(std::span<const std::byte> payload);

}  // namespace netio::posix
