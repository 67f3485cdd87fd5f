// SPDX-License-Identifier: MIT
/// @file
/// Pacing that resumes after the safety net's fallback run picks up where the pacing before
/// it left off (our extension 11).
///
/// A fallback run's intervals are measured while whatever made pacing lose (a slow compute
/// node, a busy host) still holds, and the tracking rule proposes from the latest measured
/// durations: the first paced intervals after the run are proposed from its slow ones, and
/// their starts are spaced by them, for as long as they are in the proposer's recent window.
/// If the network has recovered meanwhile, that is several intervals at the slow pace (24 ×
/// 24, a compute node at 70 % for 5 s: 438 ms where the network carries 322 ms, 0.951× best-
/// effort's bandwidth). So while the recent window holds an interval of the fallback run, or
/// one of the first two paced after it (the first drains what best-effort left behind, the
/// second overlaps it), the proposal is bounded by the last steady one before the run:
///
///   durp_k ≤ durp_steady,   the starts spaced by ≤ med_recent of the steady proposal
///
/// If the network is still slow, the first resumed intervals do not keep up, the guard sees
/// them against the fallback's own reference, and the tracking rule follows the measured
/// durations once the resumed ones fill its window.
///
/// Fixed assignment only. Under assignment by load (SchedulerConfig::assignment) the duration
/// an interval needs follows the shares the Assigner decided for it, which change from one
/// interval to the next: the steady proposal was made for other shares, and the one before a
/// fallback run is often one that lost (4 × 4 by load, a compute node joining: resumed at the
/// 56.5 ms proposed before the run where intervals took 62–75 ms, the guard fell back twice
/// more and ran 105 intervals best-effort where pacing alone ran 8, a node cut to 8 of 40).
/// There the tracking rule resumes from the measured intervals, as with the rule off.
///
/// Steady: a paced proposal whose recent window holds paced intervals only. Replicas that
/// answer the same requests keep the same state (the latest steady interval and the first
/// resumed one are each a property of the history and of the guard's decisions).
///
/// Thread-safety: none; one per DDE, used on its thread.
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/history_manager.hpp"
#include "netio/scheduler/proposer.hpp"

#include <optional>
#include <span>

namespace netio::scheduler {

class PacingResume {
 public:
  explicit PacingResume(const SchedulerConfig& config) : config_(config) {}

  /// The proposal `p` for interval `k`, computed from `window` (the proposer's, w last), which
  /// the guard decided `best_effort` or paced: bounded while pacing resumes, unchanged
  /// otherwise. `p.start` may carry a clock-rate scaling of its distance from w's end; the
  /// bound keeps it.
  ProposedInterval apply(IntervalIndex k, bool best_effort, std::span<const UnifiedInterval> window,
                         ProposedInterval p);

  /// The last steady proposal, if pacing has run steadily yet.
  const std::optional<ProposedInterval>& steady() const noexcept { return steady_; }

 private:
  SchedulerConfig config_;
  std::optional<ProposedInterval> steady_;   ///< the steady proposal of the highest interval
  std::optional<IntervalIndex> resumed_at_;  ///< the first paced interval after a fallback run
};

}  // namespace netio::scheduler
