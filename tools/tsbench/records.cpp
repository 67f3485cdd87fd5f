// SPDX-License-Identifier: MIT
#include "tsbench/records.hpp"

#include "common/latency_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace netio::tools::tsbench {

namespace {

double micros(ns::Duration d) { return static_cast<double>(d.count()) / 1e3; }

}  // namespace

namespace {

// Every time-slice below the count reached an application complete; duplicates and their
// attempts (see RunSummary).
void count_deliveries(const RunRecords& records, RunSummary& s) {
  std::map<ns::TimesliceIndex, std::vector<std::uint32_t>> attempts;
  ns::TimesliceIndex highest = 0;
  for (const auto& t : records.timeslices) {
    if (!t.complete) continue;
    attempts[t.timeslice].push_back(t.attempt);
    highest = std::max(highest, t.timeslice + 1);
    if (t.attempt > 0) ++s.reassigned;
  }
  // expected_timeslices 0: lost is not countable from these records (a compute node's own in
  // role mode), duplicates still are.
  const auto count = records.expected_timeslices.value_or(highest);
  std::uint64_t delivered = 0;
  for (auto& [t, seen] : attempts) {
    if (t < count) ++delivered;
    std::sort(seen.begin(), seen.end());
    s.duplicates += seen.size() - 1;
    s.same_attempt += static_cast<std::uint64_t>(seen.end() - std::unique(seen.begin(), seen.end()));
  }
  s.lost = count - delivered;
}

// --fail: the capacity before the failure and the time until the aggregate is back (see RunSummary).
void measure_recovery(const RunRecords& records, RunSummary& s) {
  s.recovery_ms = std::numeric_limits<double>::quiet_NaN();
  if (!records.failed_at || records.timeslices.empty()) return;
  using namespace std::chrono_literals;
  constexpr ns::Duration bin = 10ms;
  constexpr ns::Duration window = 200ms;
  const auto failed = *records.failed_at;
  ns::Time last = ns::Time::min();
  ns::ComputeIndex computes = 0;
  for (const auto& t : records.timeslices) {
    last = std::max(last, t.handed_over);
    computes = std::max(computes, t.compute + 1);
  }
  const ns::Time from = failed - 2s;
  if (last <= failed) return;
  const auto bins = static_cast<std::size_t>((last - from) / bin) + 1;
  std::vector<std::uint64_t> bytes(bins + 1, 0);  // prefix sums, from `from` on
  for (const auto& t : records.timeslices) {
    if (!t.complete || t.handed_over < from) continue;
    bytes[static_cast<std::size_t>((t.handed_over - from) / bin) + 1] += t.bytes;
  }
  for (std::size_t i = 1; i < bytes.size(); ++i) bytes[i] += bytes[i - 1];
  const auto gbps = [&](std::size_t begin, std::size_t end) {  // bins [begin, end)
    return static_cast<double>(bytes[end] - bytes[begin]) * 8 /
           static_cast<double>((bin * static_cast<ns::Duration::rep>(end - begin)).count());
  };
  const auto failed_bin = static_cast<std::size_t>((failed - from) / bin);
  s.capacity_before_gbps = gbps(0, failed_bin);
  const double threshold = recovered_fraction(computes) * s.capacity_before_gbps;
  const auto per_window = static_cast<std::size_t>(window / bin);
  // The run's own end (the inputs stop) is no failure: windows end half a second before it.
  const auto end_bin = bins > failed_bin + 50 ? bins - 50 : bins;
  const auto two_seconds = static_cast<std::size_t>(2s / bin);
  s.lowest_after_gbps = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t b = failed_bin; b + per_window <= std::min(end_bin, failed_bin + two_seconds); ++b) {
    const auto g = gbps(b, b + per_window);
    if (std::isnan(s.lowest_after_gbps) || g < s.lowest_after_gbps) s.lowest_after_gbps = g;
  }
  for (std::size_t b = failed_bin + 1; b + per_window <= end_bin; ++b) {
    if (gbps(b, b + per_window) >= threshold) {
      s.recovery_ms = static_cast<double>((bin * static_cast<ns::Duration::rep>(b - failed_bin)).count()) / 1e6;
      return;
    }
  }
}

// --drain, --join: the aggregate before and after the change (see RunSummary).
void measure_membership(const RunRecords& records, RunSummary& s) {
  using namespace std::chrono_literals;
  const auto nan = std::numeric_limits<double>::quiet_NaN();
  s.membership_before_gbps = s.membership_after_gbps = s.joined_first_ms = nan;
  if (!records.membership_at || records.timeslices.empty()) return;
  const auto at = *records.membership_at;
  ns::Time last = ns::Time::min();
  ns::Time joined_first = ns::Time::max();
  for (const auto& t : records.timeslices) {
    last = std::max(last, t.handed_over);
    if (records.joined_compute == t.compute && t.handed_over >= at)
      joined_first = std::min(joined_first, t.handed_over);
  }
  const auto gbps = [&](ns::Time begin, ns::Time end) {
    if (end <= begin) return nan;
    std::uint64_t bytes = 0;
    for (const auto& t : records.timeslices) {
      if (t.complete && t.handed_over >= begin && t.handed_over < end) bytes += t.bytes;
    }
    return static_cast<double>(bytes) * 8 / static_cast<double>((end - begin).count());
  };
  s.membership_before_gbps = gbps(std::max(at - 2s, ns::Time{0}), at);
  s.membership_after_gbps = gbps(at + 1s, last - 500ms);
  if (joined_first != ns::Time::max()) s.joined_first_ms = static_cast<double>((joined_first - at).count()) / 1e6;
}

}  // namespace

RunSummary summarize(const RunRecords& records, ClockBasis basis) {
  RunSummary s;
  s.fallback = records.fallback;
  count_deliveries(records, s);
  measure_recovery(records, s);
  s.computes_failed = records.computes_failed;
  s.dde_replicas_lost = records.dde_replicas_lost;
  s.proposals_after_failure = records.proposals_after_failure;
  s.assignments_after_failure = records.assignments_after_failure;
  measure_membership(records, s);
  s.computes_drained = records.computes_drained;
  s.computes_joined = records.computes_joined;
  s.inputs_joined = records.inputs_joined;
  s.input_join_from = records.input_join_from;
  s.contributions_reassigned = records.contributions_reassigned;
  s.computes_lost = records.computes_lost;
  s.pushes_blocked = records.pushes_blocked;
  s.push_blocked_s = static_cast<double>(records.push_blocked.count()) / 1e9;
  s.assignment_waits = records.assignment_waits;
  s.assignment_wait_s = static_cast<double>(records.assignment_wait.count()) / 1e9;
  if (!records.assignments.empty()) s.assignment = records.assignments.back();
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
  std::map<ns::TimesliceIndex, bool> counted;  // a duplicate's bytes count once
  for (const auto& t : records.timeslices) {
    ++s.timeslices;
    if (t.complete && !counted.emplace(t.timeslice, true).second) continue;
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
