// SPDX-License-Identifier: MIT
// Fixed-width little-endian integers: the byte order of every netio wire format (handshake,
// page format, frames, the back-ends' control messages, the patterns' and the DFS messages,
// the tools' benchmark formats). Unchecked: the caller has checked that the bytes are there;
// wire_codec.hpp reads and writes whole messages with bounds checks.
#pragma once

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace netio::detail {

template <std::integral T>
constexpr T from_or_to_little_endian(T value) noexcept {
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    auto bytes = std::bit_cast<std::array<unsigned char, sizeof(T)>>(value);
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
    return std::bit_cast<T>(bytes);
  }
  return value;
}

// Writes `value` to out[0, sizeof(T)), least significant byte first.
template <std::integral T>
inline void store_le(std::byte* out, T value) noexcept {
  value = from_or_to_little_endian(value);
  std::memcpy(out, &value, sizeof value);
}

// Reads what store_le<T> wrote.
template <std::integral T>
inline T load_le(const std::byte* in) noexcept {
  T value;
  std::memcpy(&value, in, sizeof value);
  return from_or_to_little_endian(value);
}

}  // namespace netio::detail
