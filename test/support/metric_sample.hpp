// SPDX-License-Identifier: MIT
// Finding a sample in what a MetricsRegistry collected (netio/metrics.hpp), for the metrics tests.
#pragma once

#include "netio/metrics.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace netio::test {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// The value of the first sample `name` whose labels include all of `labels`; nullopt if none.
inline std::optional<double> sample(const std::vector<Metric>& metrics, const std::string& name,
                                    const MetricLabels& labels) {
  for (const Metric& m : metrics) {
    if (m.name != name) continue;
    const bool all = std::all_of(labels.begin(), labels.end(), [&](const auto& label) {
      return std::find(m.labels.begin(), m.labels.end(), label) != m.labels.end();
    });
    if (all) return m.value;
  }
  return std::nullopt;
}

}  // namespace netio::test
