// SPDX-License-Identifier: MIT
#include "netio/emulated/delay_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace netio::emulated {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

}  // namespace

Xoshiro256::Xoshiro256(std::uint64_t seed) noexcept {
  for (auto& word : s_) word = splitmix64(seed);
}

std::uint64_t Xoshiro256::next() noexcept {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Xoshiro256::uniform_open() noexcept {
  // 53 random bits, shifted half a step off 0: (k + 0.5) / 2^53, k in [0, 2^53).
  return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53;
}

double normal_cdf(double z) noexcept { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double u) noexcept {
  // Acklam's algorithm.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double low = 0.02425;
  double x = 0;
  if (u < low) {
    const double q = std::sqrt(-2 * std::log(u));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (u <= 1 - low) {
    const double q = u - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log1p(-u));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step against the exact CDF.
  const double e = normal_cdf(x) - u;
  const double step = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - step / (1 + x * step / 2);
}

namespace {

double quantile(const DelayDistribution& d, double u) noexcept {  // the inverse CDF
  switch (d.kind) {
    case DelayKind::none: return 0;
    case DelayKind::constant: return d.value;
    case DelayKind::uniform: return d.min + (d.max - d.min) * u;
    case DelayKind::normal: return d.mean + d.sigma * normal_quantile(u);
    case DelayKind::lognormal: return std::exp(d.mu + d.shape * normal_quantile(u));
    case DelayKind::exponential: return -std::log1p(-u) / d.lambda;
    case DelayKind::pareto: return d.scale * std::pow(1 - u, -1 / d.alpha);
    case DelayKind::table: {
      const auto n = d.table.size();
      const auto index = std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)));
      return d.table[index];
    }
  }
  return 0;
}

}  // namespace

DelayStream::DelayStream(std::uint64_t seed, std::uint64_t stream) noexcept
    : rng_(seed ^ (stream * 0xD1B54A32D192ED03ull)) {}

double DelayStream::next_ns(const DelayDistribution& d) noexcept {
  if (d.kind == DelayKind::none) return 0;
  if (d.kind == DelayKind::constant) return std::max(0.0, d.clip ? std::min(d.value, *d.clip) : d.value);
  double value = 0;
  if (d.correlation > 0) {
    // Gaussian copula: successive z are correlated with coefficient ρ; each u = Φ(z) stays
    // uniform, so each draw keeps the configured distribution.
    const double epsilon = normal_quantile(rng_.uniform_open());
    z_ = started_ ? d.correlation * z_ + std::sqrt(1 - d.correlation * d.correlation) * epsilon : epsilon;
    started_ = true;
    if (d.kind == DelayKind::normal)
      value = d.mean + d.sigma * z_;
    else if (d.kind == DelayKind::lognormal)
      value = std::exp(d.mu + d.shape * z_);
    else
      value = quantile(d, std::clamp(normal_cdf(z_), 0x1.0p-54, 1 - 0x1.0p-54));
  } else {
    value = quantile(d, rng_.uniform_open());
  }
  if (d.clip) value = std::min(value, *d.clip);
  return value > 0 ? value : 0;
}

}  // namespace netio::emulated
