// SPDX-License-Identifier: MIT
// Fixed-width little-endian integers on the wire (lengths, handshake fields).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace netio::detail {

template <typename T>
inline void store_le(std::byte* out, T value) noexcept {
  static_assert(std::endian::native == std::endian::little, "netio supports little-endian hosts only");
  std::memcpy(out, &value, sizeof value);
}

template <typename T>
inline T load_le(const std::byte* in) noexcept {
  T value;
  std::memcpy(&value, in, sizeof value);
  return value;
}

}  // namespace netio::detail
