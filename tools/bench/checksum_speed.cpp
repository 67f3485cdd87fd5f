// SPDX-License-Identifier: MIT
// How fast the tools' verification checksum is (docs/performance.md, "The verification
// checksum"): checksum64 (tools/common/checksum.cpp: XXH3_64bits, inlined) against the
// hand-rolled checksum the tools used before it, and libxxhash.so's XXH3_64bits and XXH64, on
// the sizes --verify hashes (a 40-byte control frame to a 1 MiB message). Interleaved rounds
// (each round times every function once per size, in turn), the median of the rounds, so
// that frequency changes and neighbours on the machine hit all alike.
//   checksum_speed [rounds]   prints: size  function  GB/s (median of the rounds)
#include "common/checksum.hpp"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace {

// The hand-rolled checksum as tools/common/checksum.cpp had it until XXH3 replaced it
// (xxHash64's primes and lane round, a simplified tail and finalisation): the reference.
constexpr std::uint64_t prime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t prime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t prime3 = 0x165667B19E3779F9ULL;
std::uint64_t load64(const std::byte* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
using netio::tools::mix64;
constexpr std::uint64_t lane_round(std::uint64_t lane, std::uint64_t input) {
  lane += input * prime2;
  lane = std::rotl(lane, 31);
  return lane * prime1;
}
std::uint64_t hand_rolled(const std::byte* p, std::size_t n) {
  std::uint64_t lanes[4] = {prime1 + prime2, prime2, 0, 0 - prime1};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    lanes[0] = lane_round(lanes[0], load64(p + i));
    lanes[1] = lane_round(lanes[1], load64(p + i + 8));
    lanes[2] = lane_round(lanes[2], load64(p + i + 16));
    lanes[3] = lane_round(lanes[3], load64(p + i + 24));
  }
  std::uint64_t h =
      std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) + std::rotl(lanes[3], 18) + prime3 * n;
  for (; i + 8 <= n; i += 8) h = mix64(h ^ lane_round(0, load64(p + i)));
  for (; i < n; ++i) h = (h ^ std::to_integer<std::uint64_t>(p[i])) * prime1 + prime3;
  return mix64(h);
}

std::uint64_t tools_checksum(const std::byte* p, std::size_t n) { return netio::tools::checksum64({p, n}); }
std::uint64_t xxh3(const std::byte* p, std::size_t n) { return XXH3_64bits(p, n); }
std::uint64_t xxh64(const std::byte* p, std::size_t n) { return XXH64(p, n, 0); }

struct Function {
  const char* name;
  std::uint64_t (*hash)(const std::byte*, std::size_t);
};

volatile std::uint64_t sink;

// Seconds per byte for one timing: enough calls to fill about 20 ms.
double time_once(const Function& f, const std::vector<std::byte>& data, std::size_t size) {
  const std::size_t calls = std::max<std::size_t>(1, (std::size_t{64} << 20) / size);
  std::uint64_t acc = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t c = 0; c < calls; ++c) acc += f.hash(data.data() + (c & 7), size);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sink = acc;
  return static_cast<double>(calls * size) / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const Function functions[] = {
      {"hand-rolled", hand_rolled}, {"checksum64", tools_checksum}, {"XXH3 (.so)", xxh3}, {"XXH64 (.so)", xxh64}};
  const std::size_t sizes[] = {40, 1024, 8192, 65536, 1 << 20};
  std::vector<std::byte> data((1 << 20) + 8);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(mix64(i));
  for (const std::size_t size : sizes) {
    std::vector<std::vector<double>> results(std::size(functions));
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t f = 0; f < std::size(functions); ++f) results[f].push_back(time_once(functions[f], data, size));
    }
    for (std::size_t f = 0; f < std::size(functions); ++f) {
      auto& v = results[f];
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      std::printf("%8zu  %-12s %6.2f GB/s\n", size, functions[f].name, v[v.size() / 2]);
    }
  }
}
