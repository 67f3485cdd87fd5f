// SPDX-License-Identifier: MIT
// Little-endian loads and stores and a fast non-cryptographic 64-bit checksum, for the
// benchmark wire formats. The checksum detects transport bugs (flipped, shifted, stale or
// truncated bytes), not tampering.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace netio::tools {

inline std::uint64_t load_le64(const std::byte* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline void store_le64(std::byte* p, std::uint64_t v) noexcept {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof v);
}

inline std::uint32_t load_le32(const std::byte* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

inline void store_le32(std::byte* p, std::uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}

// The splitmix64 finaliser: every input bit affects every output bit.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A checksum of `bytes`, position-sensitive (shifted data gives another value). Four
// independent lanes keep the multiplier pipeline busy: several GB/s per core, so that
// --verify costs little next to the network.
std::uint64_t checksum64(std::span<const std::byte> bytes) noexcept;

}  // namespace netio::tools
