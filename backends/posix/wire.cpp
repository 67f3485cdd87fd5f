// SPDX-License-Identifier: MIT
#include "backends/posix/wire.hpp"

#include "netio/internal/little_endian.hpp"

#include <algorithm>

namespace netio::posix {

std::vector<std::byte> encode_frame(std::span<const std::byte> payload) {
  std::vector<std::byte> frame(frame_header_size + payload.size());
  detail::store_le<std::uint64_t>(frame.data(), payload.size());
  std::copy(payload.begin(), payload.end(), frame.begin() + frame_header_size);
  return frame;
}

std::vector<std::byte> encode_request(std::uint64_t max_reply_size, std::span<const std::byte> hello) {
  // Written straight into the frame: the payload is the reply size, then the hello.
  std::vector<std::byte> frame(frame_header_size + 8 + hello.size());
  detail::store_le<std::uint64_t>(frame.data(), 8 + hello.size());
  detail::store_le<std::uint64_t>(frame.data() + frame_header_size, max_reply_size);
  std::copy(hello.begin(), hello.end(), frame.begin() + frame_header_size + 8);
  return frame;
}

std::optional<ConnectRequest> decode_request(std::span<const std::byte> payload) {
  if (payload.size() < 8) return std::nullopt;
  ConnectRequest request;
  request.max_reply_size = detail::load_le<std::uint64_t>(payload.data());
  request.hello.assign(payload.begin() + 8, payload.end());
  return request;
}

std::vector<std::byte> encode_reply(const HandshakeReply& reply) {
  const std::size_t detail_size =
      std::min(reply.accepted ? reply.accept_data.size() : reply.reason.size(), max_handshake_frame - 9);
  std::vector<std::byte> payload(9 + detail_size);
  payload[0] = std::byte{reply.accepted ? std::uint8_t{1} : std::uint8_t{0}};
  detail::store_le<std::uint64_t>(payload.data() + 1, reply.max_buffer_size);
  if (reply.accepted) {
    std::copy_n(reply.accept_data.begin(), detail_size, payload.begin() + 9);
  } else {
    std::transform(reply.reason.begin(), reply.reason.begin() + static_cast<std::ptrdiff_t>(detail_size),
                   payload.begin() + 9, [](char c) { return static_cast<std::byte>(c); });
  }
  return encode_frame(payload);
}

std::optional<HandshakeReply> decode_reply(std::span<const std::byte> payload) {
  if (payload.size() < 9 || static_cast<std::uint8_t>(payload[0]) > 1) return std::nullopt;
  HandshakeReply reply;
  reply.accepted = payload[0] == std::byte{1};
  reply.max_buffer_size = detail::load_le<std::uint64_t>(payload.data() + 1);
  if (reply.accepted)
    reply.accept_data.assign(payload.begin() + 9, payload.end());
  else
    reply.reason.assign(reinterpret_cast<const char*>(payload.data() + 9), payload.size() - 9);
  return reply;
}

}  // namespace netio::posix
