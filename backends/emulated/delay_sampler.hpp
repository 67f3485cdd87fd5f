// SPDX-License-Identifier: MIT
// Draws delays from a DelayDistribution (netio/emulation.hpp): a seeded xoshiro256** stream
// per connection, every distribution sampled by its inverse CDF from one uniform number, and
// correlation between successive draws through a Gaussian copula (so each draw keeps the
// configured distribution). Pure: no clock, no sockets; the same seed and stream give the
// same draws.
#pragma once

#include "netio/emulation.hpp"

#include <cstdint>

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

class DelaySampler {
 public:
  // `stream` separates the connections of one seed: each gets its own sequence.
  DelaySampler(DelayDistribution distribution, std::uint64_t seed, std::uint64_t stream);
  // The next delay in nanoseconds (≥ 0).
  double next_ns() noexcept;
  bool delays() const noexcept { return distribution_.kind != DelayKind::none; }
  const DelayDistribution& distribution() const noexcept { return distribution_; }

 private:
  double quantile(double u) const noexcept;  // the inverse CDF
  double next_standard_normal() noexcept;

  DelayDistribution distribution_;
  Xoshiro256 rng_;
  double z_ = 0;         // the copula's last state
  bool started_ = false;
};

}  // namespace netio::emulated
