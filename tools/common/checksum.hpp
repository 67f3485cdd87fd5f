// SPDX-License-Identifier: MIT
// A fast non-cryptographic 64-bit checksum and a mixer, for the benchmark wire formats (whose
// fields are little-endian: netio/internal/little_endian.hpp). The checksum detects transport
// bugs (flipped, shifted, stale or truncated bytes), not tampering.
#pragma once

#include "netio/internal/little_endian.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace netio::tools {

// The splitmix64 finaliser: every input bit affects every output bit.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// XXH3_64bits of `bytes` (seed 0; libxxhash, inlined), position-sensitive (shifted data
// gives another value): 3.5 to 10 GB/s per core on the 2-core VM, so that --verify costs
// little next to the network (docs/performance.md, "The verification checksum").
std::uint64_t checksum64(std::span<const std::byte> bytes) noexcept;

}  // namespace netio::tools
