// SPDX-License-Identifier: MIT
#include "netio/scheduler/pacing_resume.hpp"

#include "netio/scheduler/statistics.hpp"

#include <algorithm>
#include <vector>

namespace netio::scheduler {

ProposedInterval PacingResume::apply(std::span<const UnifiedInterval> window, ProposedInterval p) {
  // Under assignment by load each interval's duration follows its own shares: a steady
  // proposal made for other shares bounds nothing (header). Without the safety net there is
  // no fallback run to resume from: the paper's DDE, unchanged.
  if (!config_.resume_from_pacing || !config_.fallback || config_.assignment == Assignment::load) return p;
  // Fewer held: a replica that missed the first reports would read a shorter window than the
  // other and decide otherwise; nothing to resume from yet anyway.
  if (window.size() < window_length()) return p;
  window = window.last(window_length());
  const bool resuming =
      std::any_of(window.begin(), window.end(), [](const UnifiedInterval& i) { return !i.proposed_duration; });
  if (!resuming) {
    const UnifiedInterval& w = window.back();
    if (!steady_ || w.interval > steady_->interval) {
      std::vector<Duration> recent;
      for (std::size_t n = 0; n < config_.recent_length; ++n) recent.push_back(window[n].duration);
      steady_ = Steady{w.interval, *w.proposed_duration, median(std::move(recent))};
    }
    return p;
  }
  if (!steady_) return p;  // the warm-up: nothing paced to resume from
  p.duration = std::min(p.duration, steady_->duration);
  const Duration spacing = std::min(p.median_duration, steady_->spacing);
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
