// SPDX-License-Identifier: MIT
/// @file
/// Which compute node builds a time-slice, which interval and round it belongs to, and the
/// offset-based round-robin order in which an input sends its contributions.
///
/// Time-slice t belongs to compute node t mod M (the fixed assignment; by load, assigner.hpp
/// says which node, InputNode::compute_of()). Round r holds time-slices [r*M, (r+1)*M),
/// one per compute node; interval j holds rounds [j*R, (j+1)*R) with R =
/// rounds_per_interval(), i.e. time-slices [j*n, (j+1)*n) with n = R*M. Within every round,
/// input i sends first to compute node (i + round_offset) mod M, then to the next ones in
/// turn, so that at any moment the inputs target different compute nodes.
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/time.hpp"

namespace netio::scheduler {

class TimesliceLayout {
 public:
  explicit TimesliceLayout(const SchedulerConfig& config);  ///< validates config

  std::uint32_t compute_count() const noexcept { return compute_count_; }
  std::uint64_t rounds_per_interval() const noexcept { return rounds_; }
  std::uint64_t timeslices_per_interval() const noexcept { return rounds_ * compute_count_; }

  ComputeIndex compute_of(TimesliceIndex t) const noexcept { return static_cast<ComputeIndex>(t % compute_count_); }
  IntervalIndex interval_of(TimesliceIndex t) const noexcept { return t / timeslices_per_interval(); }
  TimesliceIndex first_timeslice(IntervalIndex j) const noexcept { return j * timeslices_per_interval(); }
  /// Whether t is a place of the last round of a stream of `end` time-slices (0 .. end − 1)
  /// that the stream does not fill: no input has it, yet an input's order puts it before
  /// pushed ones of that round, so a sender passes over it rather than wait.
  bool beyond_the_end(TimesliceIndex t, TimesliceIndex end) const noexcept {
    return t >= end && t < (end + compute_count_ - 1) / compute_count_ * compute_count_;
  }

  /// The time-slice of interval j whose contributions' acknowledgements every IE reports
  /// (MetadataReport::probe_acknowledged, extension 10): one in the interval's middle round,
  /// away from its start and its tail, on compute node j mod M of the fixed assignment.
  TimesliceIndex probe_timeslice(IntervalIndex j) const noexcept {
    return first_timeslice(j) + (rounds_ / 2) * compute_count_ + j % compute_count_;
  }

  /// The compute node input i sends to first in every round.
  ComputeIndex first_compute(InputIndex i) const noexcept;

  /// The time-slice of input i's s-th contribution overall (s = 0, 1, ...; round s / M).
  TimesliceIndex timeslice_at(InputIndex i, std::uint64_t s) const noexcept;
  /// The inverse: at which place s input i sends time-slice t.
  std::uint64_t sequence_of(InputIndex i, TimesliceIndex t) const noexcept;

 private:
  std::uint32_t compute_count_;
  std::uint64_t rounds_;
  std::uint32_t round_offset_;
};

}  // namespace netio::scheduler
