// SPDX-License-Identifier: MIT
#include "latency_stats.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace netio::tools {

double percentile_of_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) throw Error(Errc::invalid_option, "percentile of no samples");
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(rank));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double weight = rank - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * weight;
}

LatencyStats compute_latency_stats(std::vector<double> samples_us) {
  if (samples_us.empty()) throw Error(Errc::invalid_option, "latency statistics of no samples");
  std::sort(samples_us.begin(), samples_us.end());
  LatencyStats stats;
  stats.count = samples_us.size();
  stats.min = samples_us.front();
  stats.max = samples_us.back();
  stats.median = percentile_of_sorted(samples_us, 50);
  stats.p90 = percentile_of_sorted(samples_us, 90);
  stats.p99 = percentile_of_sorted(samples_us, 99);
  stats.p999 = percentile_of_sorted(samples_us, 99.9);
  const double n = static_cast<double>(samples_us.size());
  stats.mean = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) / n;
  // Two passes (mean first) rather than sum of squares: no cancellation for tight spreads.
  double squares = 0;
  for (const double sample : samples_us) squares += (sample - stats.mean) * (sample - stats.mean);
  stats.stddev = std::sqrt(squares / n);
  return stats;
}

std::string text_histogram(std::span<const double> samples_us, HistogramOptions options) {
  if (samples_us.empty()) return {};
  const int per_decade = std::max(1, options.buckets_per_decade);
  // Below 1 ns nothing is measurable; clamping keeps log10 finite.
  constexpr double floor_seconds = 1e-3;
  auto bucket_of = [&](double sample) {
    return static_cast<long>(std::floor(std::log10(std::max(sample, floor_seconds)) * per_decade));
  };
  auto edge = [&](long bucket) { return std::pow(10.0, static_cast<double>(bucket) / per_decade); };

  const auto [min_it, max_it] = std::minmax_element(samples_us.begin(), samples_us.end());
  const long first = bucket_of(*min_it);
  const long last = bucket_of(*max_it);
  std::vector<std::size_t> counts(static_cast<std::size_t>(last - first + 1), 0);
  for (const double sample : samples_us) ++counts[static_cast<std::size_t>(bucket_of(sample) - first)];
  const std::size_t largest = *std::max_element(counts.begin(), counts.end());

  std::string out;
  const double total = static_cast<double>(samples_us.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const long bucket = first + static_cast<long>(i);
    const auto bar = static_cast<std::size_t>(std::lround(
        static_cast<double>(options.bar_width) * static_cast<double>(counts[i]) / static_cast<double>(largest)));
    // A bucket with samples always shows at least one mark, so rare outliers stay visible.
    const std::size_t marks = counts[i] > 0 ? std::max<std::size_t>(bar, 1) : 0;
    out += fmt::format("{:>10.2f} - {:>10.2f} us |{:<{}}| {:>9} {:>6.2f}%\n", edge(bucket), edge(bucket + 1),
                       std::string(marks, '#'), options.bar_width, counts[i],
                       100.0 * static_cast<double>(counts[i]) / total);
  }
  return out;
}

}  // namespace netio::tools
