// SPDX-License-Identifier: MIT
#include "run_recorder.hpp"

#include <algorithm>

namespace netio::scheduler::simulation {

RunRecorder::RunRecorder(std::uint64_t buffer_bytes, std::uint64_t timeslices_per_interval,
                         std::uint32_t warmup_intervals) {
  records_.buffer_bytes = buffer_bytes;
  records_.timeslices_per_interval = timeslices_per_interval;
  records_.warmup_intervals = warmup_intervals;
}

void RunRecorder::fill(Time at, ComputeIndex c, std::uint64_t held_bytes) {
  records_.fill.push_back(
      FillSample{at, c, 100.0 * static_cast<double>(held_bytes) / static_cast<double>(records_.buffer_bytes)});
}

void RunRecorder::peak(std::uint64_t held_bytes) {
  records_.peak_fill_percent = std::max(
      records_.peak_fill_percent, 100.0 * static_cast<double>(held_bytes) / static_cast<double>(records_.buffer_bytes));
}

void RunRecorder::proposed(InputIndex input, IntervalIndex interval, Time start) {
  const auto it = proposed_starts_.find({input, interval});
  if (it == proposed_starts_.end()) {
    proposed_starts_.emplace(std::pair{input, interval}, start);
    return;
  }
  replica_gaps_.push_back(start > it->second ? start - it->second : it->second - start);
  proposed_starts_.erase(it);
}

void RunRecorder::compare(const IntervalAssignment& assignment, int by) {
  if (by == 0) records_.assignments.push_back(assignment);
  const auto it = first_assigned_.find(assignment.interval);
  if (it == first_assigned_.end()) {
    first_assigned_.emplace(assignment.interval, std::pair{by, assignment});
    return;
  }
  if (it->second.first == by) return;  // one replica decides an interval once
  ++assignments_compared_;
  if (!(it->second.second == assignment)) ++assignment_mismatches_;
  first_assigned_.erase(it);
}

void RunRecorder::assigned_by_replica(const IntervalAssignment& assignment) {
  // At the failover it hands over what it decided already: some the coordinator had too.
  if (!records_.assignments.empty() && records_.assignments.back().interval >= assignment.interval) return;
  records_.assignments.push_back(assignment);
}

void RunRecorder::finish(SimulationResult& result, std::optional<FallbackStats> fallback) {
  std::sort(records_.timeslices.begin(), records_.timeslices.end(),
            [](const auto& a, const auto& b) { return a.timeslice < b.timeslice; });
  std::stable_sort(records_.intervals.begin(), records_.intervals.end(), [](const auto& a, const auto& b) {
    return a.input != b.input ? a.input < b.input : a.interval < b.interval;
  });
  if (fallback) records_.fallback = fallback;
  result.records = std::move(records_);
  result.replica_gaps = std::move(replica_gaps_);
  result.assignments_compared = assignments_compared_;
  result.assignment_mismatches = assignment_mismatches_;
}

}  // namespace netio::scheduler::simulation
