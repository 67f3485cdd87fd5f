// SPDX-License-Identifier: MIT
#include "handshake.hpp"

#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace netio::detail {

std::string_view to_string(SocketKind kind) noexcept {
  switch (kind) {
    case SocketKind::low_latency_send: return "a low-latency send socket";
    case SocketKind::high_throughput_send: return "a high-throughput send socket";
  }
  return "an unknown socket kind";
}

std::vector<std::byte> encode_hello(const Hello& hello) {
  std::vector<std::byte> bytes(hello.challenge ? authenticating_hello_size : hello_size);
  store_le<std::uint32_t>(bytes.data(), hello_magic);
  store_le<std::uint16_t>(bytes.data() + 4, hello.version);
  bytes[6] = static_cast<std::byte>(hello.kind);
  bytes[7] = static_cast<std::byte>(hello.challenge ? hello_flag_authenticate : 0);
  store_le<std::uint64_t>(bytes.data() + 8, hello.buffer_size);
  if (hello.challenge) std::copy(hello.challenge->begin(), hello.challenge->end(), bytes.begin() + hello_size);
  return bytes;
}

Hello decode_hello(std::span<const std::byte> bytes) {
  if (bytes.size() < hello_size || load_le<std::uint32_t>(bytes.data()) != hello_magic) {
    throw Error(Errc::handshake_rejected, "the peer is not a netio socket (bad handshake magic)");
  }
  Hello hello;
  hello.version = load_le<std::uint16_t>(bytes.data() + 4);
  if (hello.version != protocol_version) {
    throw Error(Errc::handshake_rejected, fmt::format("the peer speaks netio protocol version {}, this side version {}",
                                                      hello.version, protocol_version));
  }
  const auto kind = static_cast<std::uint8_t>(bytes[6]);
  if (kind != static_cast<std::uint8_t>(SocketKind::low_latency_send) &&
      kind != static_cast<std::uint8_t>(SocketKind::high_throughput_send)) {
    throw Error(Errc::handshake_rejected, fmt::format("the peer announced an unknown socket kind {}", kind));
  }
  hello.kind = static_cast<SocketKind>(kind);
  const auto flags = static_cast<std::uint8_t>(bytes[7]);
  if ((flags & ~hello_flag_authenticate) != 0) {
    throw Error(Errc::handshake_rejected,
                fmt::format("the peer's hello is malformed: flags byte 7 is {}, with reserved bits set", flags));
  }
  const std::size_t expected_size = (flags & hello_flag_authenticate) != 0 ? authenticating_hello_size : hello_size;
  if (bytes.size() != expected_size) {
    throw Error(Errc::handshake_rejected, fmt::format("the peer's hello is malformed: {} bytes where {} were expected",
                                                      bytes.size(), expected_size));
  }
  hello.buffer_size = load_le<std::uint64_t>(bytes.data() + 8);
  if ((flags & hello_flag_authenticate) != 0) {
    AuthNonce nonce;
    std::copy(bytes.begin() + hello_size, bytes.end(), nonce.begin());
    hello.challenge = nonce;
  }
  return hello;
}

Hello expect_hello(std::span<const std::byte> bytes, SocketKind expected, std::string_view receiver_kind) {
  const Hello hello = decode_hello(bytes);
  if (hello.kind != expected) {
    throw Error(Errc::handshake_rejected,
                fmt::format("the peer is {}, but this is {}", to_string(hello.kind), receiver_kind));
  }
  return hello;
}

}  // namespace netio::detail
