// SPDX-License-Identifier: MIT
// Control frames: the small fixed-format messages the tools exchange besides their payload
// (run boundaries and end of stream for the throughput pair, hello/goodbye for pingpong).
//
// Layout, 48 bytes, every field little-endian:
//   0..7    magic   0xCC54'434F'4954'454E  ("NETIOCT" + 0xCC: bit 63 is set)
//   8..11   kind    (ControlKind)
//   12..15  version (control_version)
//   16..23  a       (a, b, c: meaning depends on the kind)
//   24..31  b
//   32..39  c
//   40..47  check   checksum64 (XXH3_64bits, checksum.hpp) of bytes 0..39
//
// Payload messages of the tools keep bit 63 of their first 8 bytes clear, or are shorter
// than 8 bytes, so a frame is told apart by its first word whatever the payload size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace netio::tools {

inline constexpr std::size_t control_frame_size = 48;
inline constexpr std::uint64_t control_magic = 0xCC54'434F'4954'454EULL;
inline constexpr std::uint32_t control_version = 2;  // 2: check is XXH3_64bits (1: a hand-rolled checksum)

enum class ControlKind : std::uint32_t {
  // netio_throughput → netio_recv (see bench_message.hpp)
  run_begin = 1,
  run_end = 2,
  end_of_stream = 3,
  // netio_pingpong (see pingpong_protocol.hpp)
  ping_hello = 16,
  ping_welcome = 17,
  ping_goodbye = 18,
  ping_goodbye_ack = 19,
};

struct ControlFrame {
  ControlKind kind{};
  std::uint64_t a = 0, b = 0, c = 0;

  friend bool operator==(const ControlFrame&, const ControlFrame&) = default;
};

using ControlFrameBytes = std::array<std::byte, control_frame_size>;

ControlFrameBytes encode_control_frame(const ControlFrame& frame) noexcept;

// Bit 63 of the first word is set: a control frame, or a payload message that was
// corrupted. Cheap: the receiver's hot path tests this on every message.
inline bool looks_like_control_frame(std::span<const std::byte> message) noexcept {
  return message.size() >= 8 && (std::to_integer<unsigned>(message[7]) & 0x80U) != 0;
}

// The frame, or nullopt when `message` is not a well-formed control frame of our version
// (wrong size, magic, version or checksum).
std::optional<ControlFrame> decode_control_frame(std::span<const std::byte> message) noexcept;

}  // namespace netio::tools
