// SPDX-License-Identifier: MIT
/// @file
/// The DDE's safety net (our extension 7): pacing that carries less than best-effort would is
/// switched off for a while.
///
/// DFS must never make event building worse than FLESnet's best-effort, but whether pacing
/// wins depends on what the engines cannot see: a busy host whose timers fire late, a port
/// that serves first come first served, a slow compute node that holds every interval's
/// tail. The guard watches what the DDE does see, the measured duration of every interval (the
/// time the network took to carry it), and compares the paced intervals with the latest
/// best-effort ones:
///
///   reference   = median duration of the latest `fallback_window` best-effort intervals
///                 (the warm-up before the first proposal, then the fallback intervals; the
///                 first of each run left out: it starts from the state pacing left)
///   paced       = median duration of the latest `fallback_window` paced intervals of the
///                 current pacing run, its first left out (it may still run on what was
///                 proposed before the run)
///   engage when   paced > reference · (1 + fallback_margin)
///
/// Engaged, every interval decided runs best-effort (Proposal::best_effort: unpaced, no θ
/// gate), which also measures a fresh reference; after `hold` intervals the guard lets pacing
/// try again. The hold starts at `fallback_hold` and doubles (up to 8×) each time a retry
/// loses at its first check, so that pacing that keeps losing costs ever fewer intervals;
/// a retry that holds resets it (hysteresis). A reference measured before conditions changed
/// (a slow-down that hits both schedulers) engages the guard once, which then measures the
/// reference anew.
///
/// The spread rule (extension 10, SchedulerConfig::fallback_on_spread): pacing puts a
/// time-slice's contributions a round's (M − 1)/M apart by construction (input i sends to
/// compute node (i + p) mod M at a round's p-th slot). Where best-effort's own spread — the
/// median over the reference intervals of the probe time-slice's spread, as the IEs'
/// acknowledgements show it — is less than a quarter of that, pacing cannot win on spread (a
/// network whose switches interleave the inputs' packets, so that a time-slice's
/// contributions arrive together): the guard decides best-effort, and keeps deciding it while
/// that holds, without a hold; it is re-checked at every interval, on the reference the
/// best-effort intervals keep measuring.
///
/// The guard decides interval k once, when the DDE first proposes it, from the history up to
/// w = k − proposal_distance and its own earlier decisions: replicas fed the same reports
/// decide the same. A replica started late starts pacing and agrees once the other's hold
/// has run out. The decisions, how often the guard engaged and how many intervals it ran
/// best-effort are kept for statistics.
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/history_manager.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <map>
#include <optional>

namespace netio::scheduler {

struct FallbackStats {
  std::uint64_t engaged = 0;                ///< times pacing lost and the guard switched to best-effort
  std::uint64_t released = 0;               ///< times it let pacing try again
  std::uint64_t best_effort_intervals = 0;  ///< intervals decided best-effort
  std::uint64_t engaged_on_spread = 0;      ///< of `engaged`: on the spread rule (extension 10)
  bool active = false;                      ///< the latest decision was best-effort

  friend bool operator==(const FallbackStats&, const FallbackStats&) = default;
};

class FallbackGuard {
 public:
  explicit FallbackGuard(const SchedulerConfig& config);  ///< validates config

  /// Whether interval k runs best-effort. Decided on the first call for k (later calls return
  /// the same), from `history` up to k − proposal_distance; call with k in increasing order
  /// (an older k that is no longer remembered gets the current state). Always false when
  /// SchedulerConfig::fallback is off.
  bool best_effort(IntervalIndex k, const HistoryManager& history);
  /// The decision for k, when made and still remembered.
  std::optional<bool> decided(IntervalIndex k) const;
  /// Whether k was decided best-effort on the spread rule (Proposal::gated: run as the
  /// reference was measured, with the θ gate).
  bool on_spread(IntervalIndex k) const;

  const FallbackStats& stats() const noexcept { return stats_; }
  /// The best-effort reference the latest decision compared with (median duration).
  std::optional<Duration> reference() const noexcept { return reference_; }
  /// The reference intervals' median probe spread (extension 10), when they have one.
  std::optional<Duration> reference_spread() const noexcept { return reference_spread_; }
  /// What pacing at the reference's pace puts between a time-slice's first and last
  /// contribution: (M − 1)/M of a round, reference / R.
  std::optional<Duration> paced_spread_floor() const;

 private:
  bool ran_best_effort(IntervalIndex j) const;
  void update_reference(IntervalIndex w, const HistoryManager& history);
  std::optional<Duration> paced_median(IntervalIndex w, const HistoryManager& history) const;

  SchedulerConfig config_;
  std::map<IntervalIndex, bool> decisions_;            ///< the latest 4·window + hold·8 or so
  std::map<IntervalIndex, bool> on_spread_decisions_;  ///< of decisions_: made on the spread rule
  std::optional<IntervalIndex> first_decided_;
  bool falling_back_ = false;
  IntervalIndex run_start_ = 0;  ///< first interval of the current run (pacing or best-effort)
  std::uint32_t hold_;
  bool retrying_ = false;   ///< the current pacing run is a retry after a fallback
  bool on_spread_ = false;  ///< the current fallback run lasts while the spread rule holds
  std::optional<Duration> reference_;
  std::optional<Duration> reference_spread_;
  FallbackStats stats_;
};

}  // namespace netio::scheduler
