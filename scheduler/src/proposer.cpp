// SPDX-License-Identifier: MIT
#include "netio/scheduler/proposer.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace netio::scheduler {

Proposer::Proposer(const SchedulerConfig& config) : config_(config) { validate(config_); }

std::optional<SpeedUpCheck> Proposer::check_speed_up(std::span<const UnifiedInterval> window,
                                                     Duration median_duration) const {
  if (window.empty() || median_duration <= Duration::zero()) return std::nullopt;
  std::vector<double> deviations;  // d_i in % of med_durm_hist
  deviations.reserve(window.size());
  for (const UnifiedInterval& i : window) {
    if (!i.proposed_duration) return std::nullopt;
    const auto difference = std::abs((i.duration - *i.proposed_duration).count());
    deviations.push_back(100.0 * static_cast<double>(difference) / static_cast<double>(median_duration.count()));
  }
  const auto count = static_cast<double>(window.size());  // = hist_cnt
  SpeedUpCheck check;
  for (const double d : deviations) check.mean += d / count;
  for (const double d : deviations) check.variance += (d - check.mean) * (d - check.mean) / count;
  check.applies = check.variance <= config_.speed_up_variance_threshold;
  return check;
}

ProposedInterval Proposer::propose(IntervalIndex k, std::span<const UnifiedInterval> window) const {
  const auto reject = [&](const std::string& what) {
    throw Error(Errc::invalid_option, "proposer: cannot propose interval " + std::to_string(k) + ": " + what);
  };
  if (window.size() != config_.proposal_window()) {
    reject("the window holds " + std::to_string(window.size()) + " intervals, not " +
           std::to_string(config_.proposal_window()) + " (the proposal window)");
  }
  for (std::size_t n = 1; n < window.size(); ++n) {
    if (window[n].interval != window[n - 1].interval + 1) reject("the window is not consecutive");
  }
  const UnifiedInterval& last = window.back();  // w
  if (last.interval >= k) reject("the window ends with interval " + std::to_string(last.interval));

  // med_durm_hist over the window (the paper), or med_recent over its last recent_length
  // intervals (tracking): the measured duration that spaces the starts and that the
  // proposed duration is derived from.
  const bool tracking = config_.duration_rule == DurationRule::tracking;
  const std::size_t measured = tracking ? std::min<std::size_t>(config_.recent_length, window.size()) : window.size();
  std::vector<Duration> durations;
  durations.reserve(measured);
  for (std::size_t n = window.size() - measured; n < window.size(); ++n) durations.push_back(window[n].duration);

  ProposedInterval p;
  p.interval = k;
  p.median_duration = median(std::move(durations));
  p.start = last.end() + static_cast<Duration::rep>(k - last.interval - 1) * p.median_duration;
  const auto at_least_1ns = [](double ns) { return Duration{std::max<Duration::rep>(1, std::llround(ns))}; };
  const auto median_ns = static_cast<double>(p.median_duration.count());
  if (tracking) {
    const double step = (100.0 - config_.speed_up_percent) / 100.0;  // one ssu_pct shorter
    p.duration = at_least_1ns(tracked_duration(k, window, median_ns, step));
    return p;
  }
  p.duration = std::max(p.median_duration, Duration{1});  // a proposal lasts at least 1 ns
  p.speed_up = check_speed_up(window, p.median_duration);
  if (p.speed_up && p.speed_up->applies) {
    p.duration = at_least_1ns(median_ns * (100.0 - config_.speed_up_percent) / 100.0);  // as rounded before
  }
  return p;
}

double Proposer::tracked_duration(IntervalIndex k, std::span<const UnifiedInterval> window, double median_ns,
                                  double step) const {
  const UnifiedInterval& last = window.back();
  if (kept_up(last)) {
    const auto paced = static_cast<double>(last.proposed_duration->count());
    // The network had room: shorten by ssu_pct for each interval since w (up to
    // proposal_distance of them), so that the proposals come down as fast as they would
    // stepping interval by interval ...
    // ... unless the acknowledgements took longer than in the interval before: then the
    // slack kept_up() allows is a queue that this pace is building, not room (extension 6). Hold.
    if (rising_latency(window)) return paced;
    auto steps = static_cast<double>(std::min<IntervalIndex>(k - last.interval, config_.proposal_distance));
    // ... and twice as fast for each earlier interval of w's chain in the window (intervals
    // proposal_distance apart: each proposal is stepped from the one proposal_distance
    // before, so neighbours belong to two chains that step in turn) that kept up while its
    // successor's measured duration came down with its proposal: the network follows, so it
    // has more room than one step (a slow-down over). At the network's capacity the measured
    // durations stop falling, and the steps are single again (extension 8).
    if (config_.faster_recovery) {
      const std::size_t apart = config_.proposal_distance;
      for (std::size_t n = window.size() - 1; n >= apart && followed(window[n - apart], window[n]); n -= apart)
        steps *= 2;
    }
    return paced * std::pow(step, steps);
  }
  return median_ns * step;  // w ran best-effort, or longer than paced: ssu_pct under med_recent
}

bool Proposer::kept_up(const UnifiedInterval& i) const {
  if (!i.proposed_duration) return false;
  // Kept up: it took what it was paced at, plus the last contribution's way there and back,
  // within ssu_pct/5 of its length (1 % at the default).
  const auto paced = static_cast<double>(i.proposed_duration->count());
  const double tail = static_cast<double>(i.ack_latency.count()) + paced * config_.speed_up_percent / 500.0;
  return static_cast<double>(i.duration.count()) <= paced + tail;
}

bool Proposer::followed(const UnifiedInterval& before, const UnifiedInterval& after) const {
  // Both kept up, and the measured duration fell by at least half a step of ssu_pct.
  return kept_up(before) && kept_up(after) && after.proposed_duration < before.proposed_duration &&
         static_cast<double>(after.duration.count()) <=
             static_cast<double>(before.duration.count()) * (1.0 - config_.speed_up_percent / 200.0);
}

bool Proposer::rising_latency(std::span<const UnifiedInterval> window) const {
  if (config_.duration_rule != DurationRule::tracking || !config_.hold_on_rising_latency || window.size() < 2)
    return false;
  const UnifiedInterval& last = window.back();
  if (!last.proposed_duration) return false;
  const auto now = static_cast<double>(last.ack_latency.count());
  const auto before = static_cast<double>(window[window.size() - 2].ack_latency.count());
  // Rising: by more than ssu_pct of itself, and by more than the share of the interval that
  // kept_up() allows (ssu_pct/5 %): a jitter of microseconds in long intervals is no queue.
  const double paced = static_cast<double>(last.proposed_duration->count());
  return now - before > std::max(before * config_.speed_up_percent / 100.0, paced * config_.speed_up_percent / 500.0);
}

}  // namespace netio::scheduler
