// SPDX-License-Identifier: MIT
// Draws delays from a DelayDistribution (netio/emulation.hpp): a seeded xoshiro256** stream
// per connection, every distribution sampled by its inverse CDF from one uniform number, and
// correlation between successive draws through a Gaussian copula (so each draw keeps the
// configured distribution). Pure: no clock, no sockets; the same seed and stream give the
// same draws.
#pragma once

#include "netio/emulation.hpp"

#include <cstdint>
#include <utility>

namespace netio::emulated {

// xoshiro256** (Blackman and Vigna), seeded through splitmix64.
class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed) noexcept;
  std::uint64_t next() noexcept;
  // Uniform in (0, 1): never exactly 0 or 1, so inverse CDFs stay finite.
  double uniform_open() noexcept;

 private:
  std::uint64_t s_[4];
};

// Φ(z) and its inverse (Acklam's rational approximation refined by one Halley step:
// relative error below 1e-12).
double normal_cdf(double z) noexcept;
double normal_quantile(double u) noexcept;

// One connection's draws from a distribution held elsewhere: its random stream and the
// copula's state, 48 bytes. The simulator keeps one per connection and direction (74,000 at
// 192 x 192) beside one distribution per node, so that a draw touches one cache line of
// per-connection state rather than a copy of the distribution each.
class DelayStream {
 public:
  // `stream` separates the connections of one seed: each gets its own sequence.
  DelayStream(std::uint64_t seed, std::uint64_t stream) noexcept;
  // The next delay of `distribution` in nanoseconds (≥ 0). A stream is meant for one
  // distribution: its copula state carries from one draw to the next.
  double next_ns(const DelayDistribution& distribution) noexcept;

 private:
  Xoshiro256 rng_;
  double z_ = 0;  // the copula's last state
  bool started_ = false;
};

// A distribution and its stream together (the emulator's links).
class DelaySampler {
 public:
  DelaySampler(DelayDistribution distribution, std::uint64_t seed, std::uint64_t stream)
      : distribution_(std::move(distribution)), stream_(seed, stream) {}
  // The next delay in nanoseconds (≥ 0).
  double next_ns() noexcept { return stream_.next_ns(distribution_); }
  bool delays() const noexcept { return distribution_.kind != DelayKind::none; }
  const DelayDistribution& distribution() const noexcept { return distribution_; }

 private:
  DelayDistribution distribution_;
  DelayStream stream_;
};

}  // namespace netio::emulated
