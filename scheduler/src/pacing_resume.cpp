// SPDX-License-Identifier: MIT
#include "netio/scheduler/pacing_resume.hpp"

#include <algorithm>

namespace netio::scheduler {

ProposedInterval PacingResume::apply(IntervalIndex k, bool best_effort, std::span<const UnifiedInterval> window,
                                     ProposedInterval p) {
  // Under assignment by load each interval's duration follows its own shares: a steady
  // proposal made for other shares bounds nothing (header).
  if (!config_.resume_from_pacing || config_.assignment == Assignment::load || window.empty()) return p;
  if (best_effort) {  // a fallback (or the spread rule's) interval: the next paced one resumes
    if (!resumed_at_ || k > *resumed_at_) resumed_at_.reset();
    return p;
  }
  const std::size_t recent = std::min<std::size_t>(config_.recent_length, window.size());
  bool resuming = false;
  for (std::size_t n = window.size() - recent; n < window.size(); ++n) {
    const UnifiedInterval& i = window[n];
    if (!i.proposed_duration || (resumed_at_ && i.interval <= *resumed_at_ + 1)) resuming = true;
  }
  if (!resuming) {
    if (!steady_ || k >= steady_->interval) steady_ = p;
    return p;
  }
  if (!steady_) return p;  // the warm-up: nothing paced to resume from
  if (!resumed_at_) resumed_at_ = k;
  p.duration = std::min(p.duration, steady_->duration);
  const Duration spacing = std::min(p.median_duration, steady_->median_duration);
  if (p.median_duration > Duration::zero() && spacing < p.median_duration) {
    // The start lies whole spacings after w's end: the same distance, scaled to the bound.
    const Time end = window.back().end();
    const auto distance = static_cast<double>((p.start - end).count());
    p.start = end + Duration{static_cast<Duration::rep>(distance * static_cast<double>(spacing.count()) /
                                                        static_cast<double>(p.median_duration.count()))};
    p.median_duration = spacing;
  }
  return p;
}

}  // namespace netio::scheduler
