// SPDX-License-Identifier: MIT
// The user-level hello every connection starts with, so that a wrong or old peer gets a
// clear error instead of garbage. 16 bytes, little-endian:
//   u32 magic "NTIO" | u16 protocol version | u8 socket kind | u8 flags | u64 buffer size
// then, with flag 1 (authenticate: the sender holds a pre-shared key), its 16-byte nonce
// (authentication.hpp): 32 bytes in all. Other flag bits are reserved (0). A hello without
// a key is byte for byte the hello of before (flags was a reserved 0); a keyed one is
// refused by an older listener as malformed.
// The buffer size is the page size of a high-throughput sender, and 0 for a low-latency one.
#pragma once

#include "authentication.hpp"
#include "netio/backend/backend.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netio::detail {

enum class SocketKind : std::uint8_t { low_latency_send = 1, high_throughput_send = 2 };

constexpr std::uint32_t hello_magic = 0x4F49544E;  // "NTIO" in little-endian byte order
constexpr std::uint16_t protocol_version = 2;      // 2: an introduction follows the hello (introduction.hpp)
constexpr std::size_t hello_size = 16;
constexpr std::size_t authenticating_hello_size = hello_size + auth_nonce_size;
constexpr std::uint8_t hello_flag_authenticate = 1;
static_assert(authenticating_hello_size <= max_hello_size, "the hello must fit every back-end's connection data");

struct Hello {
  SocketKind kind = SocketKind::low_latency_send;
  std::uint64_t buffer_size = 0;
  std::uint16_t version = protocol_version;
  std::optional<AuthNonce> challenge{};  // the sender's nonce, when it authenticates with a key
};

std::vector<std::byte> encode_hello(const Hello& hello);
// Throws netio::Error(Errc::handshake_rejected) saying what is wrong with the bytes.
Hello decode_hello(std::span<const std::byte> bytes);
// Decodes and checks that the peer is of the kind expected; throws as decode_hello().
Hello expect_hello(std::span<const std::byte> bytes, SocketKind expected, std::string_view receiver_kind);

std::string_view to_string(SocketKind kind) noexcept;

}  // namespace netio::detail
