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
/// one of the first proposal_distance (2) paced after it (the first drains what best-effort
/// left behind, the second overlaps it), the proposal is bounded by the last steady one
/// before the run:
///
///   durp_k ≤ durp_steady,   the starts spaced by ≤ med_recent of the steady proposal
///
/// If the network is still slow, the first resumed intervals do not keep up, the guard sees
/// them against the fallback's own reference, and the tracking rule follows the measured
/// durations once the resumed ones fill its window.
///
/// With the safety net on (SchedulerConfig::fallback; off, the paper's DDE proposes as the
/// paper's does) and fixed assignment only. Under assignment by load (SchedulerConfig::assignment) the duration
/// an interval needs follows the shares the Assigner decided for it, which change from one
/// interval to the next: the steady proposal was made for other shares, and the one before a
/// fallback run is often one that lost (4 × 4 by load, a compute node joining: resumed at the
/// 56.5 ms proposed before the run where intervals took 62–75 ms, the guard fell back twice
/// more and ran 105 intervals best-effort where pacing alone ran 8, a node cut to 8 of 40).
/// There the tracking rule resumes from the measured intervals, as with the rule off.
///
/// Everything is read off the history, so that replicas fed the same reports agree whatever
/// order the requests come in and whatever their guards decide (a replica started late
/// decides best-effort or paced otherwise for a while; a best-effort interval's proposed
/// duration goes unused, so it is bounded alike). With d = proposal_distance and r =
/// recent_length, the window w − r − d + 1 … w (r + d intervals) shows:
///
///   resuming   one of them ran without a proposal: a fallback interval in the recent
///              window, or one before the first d paced after it (proposed from windows
///              that held fallback intervals)
///   steady     all of them paced: w's proposed duration, as the IEs report it, and the
///              median measured duration of w − r − d + 1 … w − d, the recent window w's
///              own proposal was made from under the tracking rule; the highest w is kept
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

  /// The last steady pace: interval w's proposed duration and the spacing of its start.
  struct Steady {
    IntervalIndex interval = 0;  ///< w
    Duration duration{0};        ///< w's proposed duration
    Duration spacing{0};         ///< the median measured duration its proposal was made from

    friend bool operator==(const Steady&, const Steady&) = default;
  };

  /// The proposal `p` of an interval k, computed from the history up to w, whatever the guard
  /// decides for k: bounded while pacing resumes, unchanged otherwise. `window`: the complete
  /// intervals up to w, oldest first, w last, of which the last window_length() are read;
  /// fewer (the history does not hold them all yet): unchanged. `p.start` may carry a
  /// clock-rate scaling of its distance from w's end; the bound keeps it.
  ProposedInterval apply(std::span<const UnifiedInterval> window, ProposedInterval p);

  /// The intervals up to w that apply() reads: recent_length + proposal_distance.
  std::size_t window_length() const noexcept { return config_.recent_length + config_.proposal_distance; }

  /// The last steady pace, if pacing has run steadily yet.
  const std::optional<Steady>& steady() const noexcept { return steady_; }

 private:
  SchedulerConfig config_;
  std::optional<Steady> steady_;  ///< of the highest w seen steady
};

}  // namespace netio::scheduler
