// SPDX-License-Identifier: MIT
// The POSIX back-end's wire format. TCP is a byte stream, so every buffer travels as a
// frame: an 8-byte little-endian length, then the bytes. A connection opens with
//   connector -> listener : frame(request)                (at most max_handshake_frame bytes)
//   listener  -> connector: frame(reply)
// where request = u64 max_reply_size (the largest reply the connector takes, 0: none), then
// the hello; reply = u8 accepted, u64 max_buffer_size, then the reject reason (UTF-8) or,
// for an accept, the accept data (AcceptDecision::accept_data; none unless the hello asked).
// After the reply, data frames flow from connector to listener, and reply frames (each at
// most max_reply_size bytes) from listener to connector. TCP's own flow control bounds both.
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
  std::string reason;                  // a reject's
  std::vector<std::byte> accept_data;  // an accept's
};

struct ConnectRequest {
  std::uint64_t max_reply_size = 0;
  std::vector<std::byte> hello;
};

std::vector<std::byte> encode_frame(std::span<const std::byte> payload);
std::vector<std::byte> encode_request(std::uint64_t max_reply_size, std::span<const std::byte> hello);
// std::nullopt when the bytes are not a well-formed request.
std::optional<ConnectRequest> decode_request(std::span<const std::byte> payload);
std::vector<std::byte> encode_reply(const HandshakeReply& reply);
// std::nullopt when the bytes are not a well-formed reply.
std::optional<HandshakeReply> decode_reply(std::span<const std::byte> payload);

}  // namespace netio::posix
