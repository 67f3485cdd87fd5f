// The user-level hello every connection starts with, so that a wrong or old peer gets a
// clear error instead of garbage. 16 bytes, little-endian:
//   u32 magic "NTIO" | u16 protocol version | u8 socket kind | u8 reserved (0) | u64 buffer size
// The buffer size is the page size of a high-throughput sender, and 0 for a low-latency one.
#pragma once

#include "netio/backend.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace netio::detail {

enum class SocketKind : std::uint8_t { low_latency_send = 1, high_throughput_send = 2 };

constexpr std::uint32_t hello_magic = 0x4F49544E;  // "NTIO" in little-endian byte order
constexpr std::uint16_t protocol_version = 2;  // 2: an introduction follows the hello (introduction.hpp)
constexpr std::size_t hello_size = 16;
static_assert(hello_size <= max_hello_size, "the hello must fit every back-end's connection data");

struct Hello {
  SocketKind kind = SocketKind::low_latency_send;
  std::uint64_t buffer_size = 0;
  std::uint16_t version = protocol_version;
};

std::array<std::byte, hello_size> encode_hello(const Hello& hello);
// Throws netio::Error(Errc::handshake_rejected) saying what is wrong with the bytes.
Hello decode_hello(std::span<const std::byte> bytes);
// Decodes and checks that the peer is of the kind expected; throws as decode_hello().
Hello expect_hello(std::span<const std::byte> bytes, SocketKind expected, std::string_view receiver_kind);

std::string_view to_string(SocketKind kind) noexcept;

}  // namespace netio::detail
