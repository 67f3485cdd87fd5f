// SPDX-License-Identifier: MIT
#include "tsbench/records.hpp"

#include "common/latency_stats.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace netio::tools::tsbench {

namespace {

double micros(ns::Duration d) { return static_cast<double>(d.count()) / 1e3; }

}  // namespace

RunSummary summarize(const RunRecords& records, ClockBasis basis) {
  RunSummary s;
  s.fallback = records.fallback;
  struct Span {
    ns::Time begin = ns::Time::max();
    ns::Time end = ns::Time::min();
    std::uint64_t bytes = 0;
  };
  std::map<ns::ComputeIndex, Span> per_compute;
  const ns::TimesliceIndex first_measured = records.timeslices_per_interval * records.warmup_intervals;
  std::vector<double> spreads;
  std::uint64_t bytes = 0;
  ns::Time begin = ns::Time::max();
  ns::Time end = ns::Time::min();
  for (const auto& t : records.timeslices) {
    ++s.timeslices;
    if (!t.complete) {
      ++s.incomplete;
      continue;
    }
    if (t.timeslice < first_measured) continue;
    spreads.push_back(micros(t.last_arrival - t.first_arrival));
    bytes += t.bytes;
    begin = std::min(begin, t.first_arrival);
    end = std::max(end, t.last_arrival);
    auto& span = per_compute[t.compute];
    span.begin = std::min(span.begin, t.first_arrival);
    span.end = std::max(span.end, t.last_arrival);
    span.bytes += t.bytes;
  }
  s.measured = spreads.size();
  if (!spreads.empty()) {
    std::sort(spreads.begin(), spreads.end());
    s.spread_median_us = percentile_of_sorted(spreads, 50);
    s.spread_p90_us = percentile_of_sorted(spreads, 90);
    s.spread_max_us = spreads.back();
  }
  if (basis == ClockBasis::shared) {
    if (end > begin) s.gbps = static_cast<double>(bytes) * 8 / static_cast<double>((end - begin).count());
  } else {
    for (const auto& [c, span] : per_compute) {
      if (span.end > span.begin)
        s.gbps += static_cast<double>(span.bytes) * 8 / static_cast<double>((span.end - span.begin).count());
    }
  }

  // Fill samples from the measured part of the run: from the first measured arrival on.
  std::vector<double> fill;
  for (const auto& f : records.fill) {
    if (basis == ClockBasis::shared) {
      if (spreads.empty() || f.at >= begin) fill.push_back(f.percent);
    } else {
      const auto span = per_compute.find(f.compute);
      if (span == per_compute.end() || f.at >= span->second.begin) fill.push_back(f.percent);
    }
  }
  if (!fill.empty()) {
    std::sort(fill.begin(), fill.end());
    s.fill_median_pct = percentile_of_sorted(fill, 50);
    s.fill_max_pct = fill.back();
  }
  return s;
}

std::vector<BandwidthBin> bandwidth_over_time(const RunRecords& records, ns::Duration bin) {
  std::vector<BandwidthBin> bins;
  if (records.timeslices.empty() || bin <= ns::Duration::zero()) return bins;
  ns::Time first = ns::Time::max();
  ns::Time last = ns::Time::min();
  for (const auto& t : records.timeslices) {
    first = std::min(first, t.handed_over);
    last = std::max(last, t.handed_over);
  }
  const auto count = static_cast<std::size_t>((last - first) / bin) + 1;
  std::vector<std::uint64_t> bytes(count, 0);
  for (const auto& t : records.timeslices) bytes[static_cast<std::size_t>((t.handed_over - first) / bin)] += t.bytes;
  const double seconds = static_cast<double>(bin.count()) / 1e9;
  for (std::size_t i = 0; i < count; ++i) {
    bins.push_back(
        {first + bin * static_cast<ns::Duration::rep>(i), static_cast<double>(bytes[i]) * 8 / seconds / 1e9});
  }
  return bins;
}

}  // namespace netio::tools::tsbench
