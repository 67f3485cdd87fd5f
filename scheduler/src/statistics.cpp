// SPDX-License-Identifier: MIT
#include "netio/scheduler/statistics.hpp"

#include "netio/error.hpp"

#include <algorithm>
#include <string>

namespace netio::scheduler {
namespace {

void require_values(std::size_t count, const char* what) {
  if (count == 0) throw Error(Errc::invalid_option, std::string(what) + " of no values");
}

// Partially sorts values so that the middle one(s) are in place; returns (lower, upper)
// middle, equal for an odd count.
template <typename T>
std::pair<T, T> middle(std::vector<T>& values) {
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  const T upper = *mid;
  if (values.size() % 2 == 1) return {upper, upper};
  const T lower = *std::max_element(values.begin(), mid);  // the largest of the lower half
  return {lower, upper};
}

}  // namespace

Duration median(std::vector<Duration> values) {
  require_values(values.size(), "median");
  const auto [lower, upper] = middle(values);
  return lower + (upper - lower) / 2;
}

double median(std::vector<double> values) {
  require_values(values.size(), "median");
  const auto [lower, upper] = middle(values);
  return lower + (upper - lower) / 2;
}

Time average(std::span<const Time> points) {
  require_values(points.size(), "average");
  const Time first = points.front();
  Duration sum{0};
  for (const Time point : points) sum += point - first;
  return first + sum / static_cast<Duration::rep>(points.size());
}

}  // namespace netio::scheduler
