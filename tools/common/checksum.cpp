// SPDX-License-Identifier: MIT
#include "checksum.hpp"

namespace netio::tools {
namespace {

// The primes and lane round of xxHash64 (not xxHash64 itself: the tail and the
// finalisation are simplified).
constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kPrime3 = 0x165667B19E3779F9ULL;

constexpr std::uint64_t round(std::uint64_t lane, std::uint64_t input) noexcept {
  lane += input * kPrime2;
  lane = std::rotl(lane, 31);
  return lane * kPrime1;
}

}  // namespace

std::uint64_t checksum64(std::span<const std::byte> bytes) noexcept {
  const std::byte* p = bytes.data();
  const std::size_t n = bytes.size();
  std::uint64_t lanes[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    lanes[0] = round(lanes[0], load_le64(p + i));
    lanes[1] = round(lanes[1], load_le64(p + i + 8));
    lanes[2] = round(lanes[2], load_le64(p + i + 16));
    lanes[3] = round(lanes[3], load_le64(p + i + 24));
  }
  std::uint64_t h = std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) +
                    std::rotl(lanes[3], 18) + kPrime3 * n;
  for (; i + 8 <= n; i += 8) h = mix64(h ^ round(0, load_le64(p + i)));
  for (; i < n; ++i) h = (h ^ std::to_integer<std::uint64_t>(p[i])) * kPrime1 + kPrime3;
  return mix64(h);
}

}  // namespace netio::tools
