// SPDX-License-Identifier: MIT
#include "netio/scheduler/timeslice_layout.hpp"

namespace netio::scheduler {

TimesliceLayout::TimesliceLayout(const SchedulerConfig& config)
    : compute_count_((validate(config), config.compute_count)),
      rounds_(config.rounds_per_interval()),
      round_offset_(config.round_offset % config.compute_count) {}

ComputeIndex TimesliceLayout::first_compute(InputIndex i) const noexcept {
  return static_cast<ComputeIndex>((std::uint64_t{i} + round_offset_) % compute_count_);
}

TimesliceIndex TimesliceLayout::timeslice_at(InputIndex i, std::uint64_t s) const noexcept {
  const std::uint64_t round = s / compute_count_;
  const std::uint64_t place = s % compute_count_;
  return round * compute_count_ + (first_compute(i) + place) % compute_count_;
}

std::uint64_t TimesliceLayout::sequence_of(InputIndex i, TimesliceIndex t) const noexcept {
  const std::uint64_t round = t / compute_count_;
  // place p with (first + p) mod M == t mod M
  const std::uint64_t place = (t % compute_count_ + compute_count_ - first_compute(i)) % compute_count_;
  return round * compute_count_ + place;
}

}  // namespace netio::scheduler
