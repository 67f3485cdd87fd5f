// SPDX-License-Identifier: MIT
/// @file
/// The DDE's Proposer: the proposed start and duration of an upcoming interval k from the
/// last complete intervals (paper section III-B.2): history_length of them under the paper's
/// rule, SchedulerConfig::proposal_window() in general.
///
/// With w the last interval of the window and med_durm_hist the median duration over it:
///   tp_k   = (tm_w + durm_w) + (k - w - 1) * med_durm_hist
///   durp_k = med_durm_hist, shortened by ssu_pct percent (staged speed-up) when VAR ≤ ssu_TH.
/// The paper's Eq. 1, over the window i = w-hist_cnt+1 .. w:
///   μ   = Σ d_i / hist_cnt
///   VAR = Σ (d_i - μ)² / hist_cnt
/// Where the paper is ambiguous or silent we chose:
///   - d_i: the paper takes |durm_i - durp_i| in time units and compares VAR with ssu_TH
///     given in percent; we express d_i in percent of med_durm_hist,
///     d_i = 100 * |durm_i - durp_i| / med_durm_hist, so that VAR is in %² and ssu_TH = 10
///     means "the deviations scatter by about ±3 % of an interval". (The paper's research code
///     compared the mean deviation relative to the median duration instead.)
///   - "at most" (Eq. 1's ≤) rather than the paper's prose "smaller than".
///   - the speed-up needs a proposed duration for every interval of the window: intervals
///     that ran without a proposal (the first ones) say nothing about how well proposals are
///     followed, so no speed-up until the window holds only proposed intervals.
///   - the paper's research code spaced starts by the (reduced) proposed duration; we use
///     med_durm_hist as the formula says.
///
/// DurationRule::tracking (the default; our extension, config.hpp). The paper's rule cannot
/// recover within hist_cnt intervals after a slow-down: once the IEs are paced at the slow
/// duration, the measured durations stay there, and each ssu_pct step waits for the median of
/// hist_cnt of them to move (about 34 intervals at the paper's defaults). It also settles on
/// durations measured to the last acknowledgement, tail included. With
/// med_recent the median duration of the last recent_length intervals of the window:
///   tp_k   = (tm_w + durm_w) + (k - w - 1) * med_recent
///   durp_k = durp_w * (1 - ssu_pct)^min(k - w, proposal_distance)
///              when w kept up: durm_w <= durp_w + lat_w + durp_w * ssu_pct / 500
///                              (lat_w: the median acknowledgement latency)
///          = med_recent * (1 - ssu_pct)   otherwise (w ran best-effort, or longer than paced)
/// so the proposals sit ssu_pct under what the network takes (as the paper's speed-up keeps
/// them), follow a slow-down within recent_length intervals, and come down after one by
/// ssu_pct per interval. Two refinements (config.hpp): hold_on_rising_latency keeps durp_w
/// when w's median acknowledgement latency rose over w-1's (extension 6: the slack that
/// "kept up" allows is then a queue), and faster_recovery doubles the number of steps for
/// each earlier interval of w's chain (w - proposal_distance, ...: the proposals each is
/// stepped from) that kept up while the next one's measured duration fell with its proposal
/// (extension 8). speed_up stays empty (Eq. 1 is not used). The window is the last
/// recent_length intervals only (at most hist_cnt): the rule reads nothing older, so a DDE
/// proposes from interval recent_length + proposal_distance - 1 on (counted from 0), where
/// the paper's rule leaves hist_cnt + proposal_distance - 1 intervals best-effort.
#pragma once

#include "netio/scheduler/config.hpp"
#include "netio/scheduler/history_manager.hpp"
#include "netio/scheduler/time.hpp"

#include <optional>
#include <span>

namespace netio::scheduler {

/// The outcome of Eq. 1 for one window; none when some interval of it had no proposal.
struct SpeedUpCheck {
  double mean = 0;       ///< μ, in % of med_durm_hist
  double variance = 0;   ///< VAR, in %²
  bool applies = false;  ///< VAR ≤ ssu_TH

  friend bool operator==(const SpeedUpCheck&, const SpeedUpCheck&) = default;
};

/// A proposal in the DDE's clock, with what it was computed from (for logs and CSV files).
struct ProposedInterval {
  IntervalIndex interval = 0;
  Time start{0};                ///< tp_k, local clock
  Duration duration{0};         ///< durp_k
  Duration median_duration{0};  ///< med_durm_hist
  std::optional<SpeedUpCheck> speed_up;

  friend bool operator==(const ProposedInterval&, const ProposedInterval&) = default;
};

class Proposer {
 public:
  explicit Proposer(const SchedulerConfig& config);  ///< validates config

  /// Eq. 1 over `window`, with med_durm_hist `median_duration`.
  std::optional<SpeedUpCheck> check_speed_up(std::span<const UnifiedInterval> window, Duration median_duration) const;

  /// The proposal of interval k from `window`: consecutive complete intervals, oldest first,
  /// exactly proposal_window() of them, ending with w < k. Throws netio::Error
  /// (Errc::invalid_option) when the window is not that.
  ProposedInterval propose(IntervalIndex k, std::span<const UnifiedInterval> window) const;

 private:
  /// DurationRule::tracking: durp_k from w and med_recent (ns), `step` = 1 - ssu_pct.
  double tracked_duration(IntervalIndex k, std::span<const UnifiedInterval> window, double median_ns,
                          double step) const;

  /// Extension 6: w's median acknowledgement latency exceeds w-1's by more than ssu_pct.
  bool rising_latency(std::span<const UnifiedInterval> window) const;
  /// The tracking rule's test: a paced interval took its proposal plus its tail.
  bool kept_up(const UnifiedInterval& interval) const;
  /// Extension 8: both kept up and `after`'s measured duration fell with its proposal
  /// (`before` is proposal_distance intervals before `after`: the same chain).
  bool followed(const UnifiedInterval& before, const UnifiedInterval& after) const;

  SchedulerConfig config_;
};

}  // namespace netio::scheduler
