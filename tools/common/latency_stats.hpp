// SPDX-License-Identifier: MIT
// Summary statistics and a text histogram of latency samples, in microseconds.
//
// Percentiles interpolate linearly between the closest ranks (what numpy.percentile does
// by default), so the median of {1, 2} is 1.5. stddev is the population standard deviation
// of the samples (divide by n): it describes the run that was measured.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace netio::tools {

struct LatencyStats {
  std::size_t count = 0;
  double min = 0, median = 0, mean = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, stddev = 0;
};

// Throws netio::Error (Errc::invalid_option) when `samples_us` is empty.
LatencyStats compute_latency_stats(std::vector<double> samples_us);

// The p-th percentile (0 <= p <= 100) of samples sorted in ascending order. Throws
// netio::Error (Errc::invalid_option) when there are none.
double percentile_of_sorted(std::span<const double> sorted, double p);

struct HistogramOptions {
  int buckets_per_decade = 10;  // log-scaled buckets: edges at 10^(k / buckets_per_decade)
  int bar_width = 50;           // characters of the longest bar
};

// One line per bucket from the smallest to the largest sample (empty buckets in between are
// shown, so the tail is visible):
//   "   12.59 -    15.85 us |##########                  |    1234  12.34%"
// Samples <= 0 go to the first bucket. Empty input gives an empty string.
std::string text_histogram(std::span<const double> samples_us, HistogramOptions options = {});

}  // namespace netio::tools
