// SPDX-License-Identifier: MIT
#include "netio/scheduler/fallback_guard.hpp"

#include "netio/scheduler/statistics.hpp"
#include "netio/scheduler/timeslice_layout.hpp"

#include <algorithm>
#include <vector>

namespace netio::scheduler {
namespace {

constexpr std::uint32_t max_hold_factor = 8;  // the hold doubles up to 8 × fallback_hold
constexpr IntervalIndex remembered = 256;     // decisions kept, far more than any window
// The spread rule: best-effort while its spread is less than this fraction of pacing's floor.
// A quarter: where both schedulers sit on the floor (a round's spread) a probe's noise must
// not flip the decision, nor the first intervals of a best-effort that is still decaying
// (lossless fat-tree, 64 x 64 at 2:1: its warm-up's spread 0.48 of the floor, and pacing
// wins 1.3x there); best-effort's inputs interleaved at the switches come to 0.08 of it.
constexpr double spread_floor_fraction = 0.25;

}  // namespace

FallbackGuard::FallbackGuard(const SchedulerConfig& config)
    : config_((validate(config), config)), hold_(config.fallback_hold) {}

std::optional<bool> FallbackGuard::decided(IntervalIndex k) const {
  const auto it = decisions_.find(k);
  if (it == decisions_.end()) return std::nullopt;
  return it->second;
}

bool FallbackGuard::on_spread(IntervalIndex k) const {
  const auto it = on_spread_decisions_.find(k);
  return it != on_spread_decisions_.end() && it->second;
}

bool FallbackGuard::ran_best_effort(IntervalIndex j) const {
  if (const auto d = decided(j)) return *d;
  return !first_decided_ || j < *first_decided_;  // before the first proposal: the warm-up
}

void FallbackGuard::update_reference(IntervalIndex w, const HistoryManager& history) {
  std::vector<Duration> durations;
  std::vector<Duration> spreads;
  for (IntervalIndex j = w; j >= 1 && durations.size() < config_.fallback_window; --j) {
    const UnifiedInterval* u = history.find(j);
    if (u == nullptr) {
      if (history.last_complete() && j + 2 * config_.history_length < *history.last_complete()) break;  // forgotten
      continue;
    }
    // the first interval of a best-effort run starts from the state pacing left: left out
    if (ran_best_effort(j) && ran_best_effort(j - 1) && !u->proposed_duration) {
      durations.push_back(u->duration);
      if (u->probe_spread) spreads.push_back(*u->probe_spread);
    }
  }
  if (!durations.empty()) reference_ = median(std::move(durations));
  if (!spreads.empty()) reference_spread_ = median(std::move(spreads));
}

std::optional<Duration> FallbackGuard::paced_spread_floor() const {
  if (!reference_) return std::nullopt;
  const TimesliceLayout layout(config_);
  const auto m = static_cast<Duration::rep>(layout.compute_count());
  const auto rounds = static_cast<Duration::rep>(layout.rounds_per_interval());
  return *reference_ * (m - 1) / (m * rounds);
}

std::optional<Duration> FallbackGuard::paced_median(IntervalIndex w, const HistoryManager& history) const {
  // The run's first interval may still have run on what was proposed before it (a proposal
  // that came late): it does not count.
  const IntervalIndex first = run_start_ + 1;
  std::vector<Duration> durations;
  for (IntervalIndex j = w; j >= first && durations.size() < config_.fallback_window; --j) {
    const UnifiedInterval* u = history.find(j);
    if (u != nullptr && !ran_best_effort(j) && u->proposed_duration) durations.push_back(u->duration);
    if (j == 0) break;
  }
  if (durations.size() < config_.fallback_window) return std::nullopt;
  return median(std::move(durations));
}

bool FallbackGuard::best_effort(IntervalIndex k, const HistoryManager& history) {
  if (!config_.fallback) return false;
  if (const auto d = decided(k)) return *d;
  if (!decisions_.empty() && k < decisions_.rbegin()->first) return falling_back_;
  if (!first_decided_) {
    first_decided_ = k;
    run_start_ = k;
  }
  const IntervalIndex w = k >= config_.proposal_distance ? k - config_.proposal_distance : 0;
  update_reference(w, history);
  const auto floor = paced_spread_floor();
  const bool spread_loses =
      config_.fallback_on_spread && reference_spread_ && floor &&
      static_cast<double>(reference_spread_->count()) < spread_floor_fraction * static_cast<double>(floor->count());
  // The first interval at which a pacing run can be judged: its first interval skipped,
  // fallback_window paced ones complete, proposal_distance more to wait.
  const IntervalIndex first_check = run_start_ + config_.proposal_distance + config_.fallback_window;
  if (falling_back_) {
    if (spread_loses) {
      on_spread_ = true;  // best-effort for as long as its spread beats pacing's floor
    } else if (on_spread_ || k - run_start_ >= hold_) {
      falling_back_ = false;
      on_spread_ = false;
      run_start_ = k;
      retrying_ = true;
      ++stats_.released;
    }
  } else if (spread_loses) {
    falling_back_ = true;
    on_spread_ = true;
    run_start_ = k;
    retrying_ = false;
    ++stats_.engaged;
    ++stats_.engaged_on_spread;
  } else if (const auto paced = paced_median(w, history);
             paced && reference_ &&
             static_cast<double>(paced->count()) >
                 static_cast<double>(reference_->count()) * (1.0 + config_.fallback_margin)) {
    // A retry that loses at once doubles the hold; one that held for a while starts it afresh.
    const bool lost_at_once = retrying_ && k <= first_check + 1;
    hold_ = lost_at_once ? std::min(hold_ * 2, config_.fallback_hold * max_hold_factor) : config_.fallback_hold;
    falling_back_ = true;
    run_start_ = k;
    retrying_ = false;
    ++stats_.engaged;
  } else if (retrying_ && k > first_check + 1) {
    retrying_ = false;
  }
  decisions_[k] = falling_back_;
  on_spread_decisions_[k] = falling_back_ && on_spread_;
  if (falling_back_) ++stats_.best_effort_intervals;
  stats_.active = falling_back_;
  while (!decisions_.empty() && decisions_.begin()->first + remembered < k) decisions_.erase(decisions_.begin());
  while (!on_spread_decisions_.empty() && on_spread_decisions_.begin()->first + remembered < k)
    on_spread_decisions_.erase(on_spread_decisions_.begin());
  return falling_back_;
}

}  // namespace netio::scheduler
