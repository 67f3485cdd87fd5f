// SPDX-License-Identifier: MIT
/// @file
/// All parameters of the DFS engines and the best-effort credit logic, in one struct.
///
/// Defaults are the paper's (Table I): hist_cnt 10, ssu_TH 10, ssu_pct 5 %, 10,000
/// time-slices per interval; θ 0.95 is the value of the paper's research code (the paper
/// names θ but gives no value). Every engine takes the same SchedulerConfig, and all
/// replicas of a system must use equal ones (the proposals depend on them).
#pragma once

#include <cstdint>
#include <string_view>

namespace netio::scheduler {

/// How the Proposer sets an interval's proposed duration (proposer.hpp).
enum class DurationRule {
  /// The paper's: the median measured duration of the last history_length intervals,
  /// shortened by ssu_pct when Eq. 1's variance is at most ssu_TH; starts spaced by that median.
  paper,
  /// Our extension: follow the recent intervals. An interval that kept up with its proposal
  /// (finished within one acknowledgement latency and ssu_pct/5 of it) lets the next proposal
  /// be ssu_pct shorter per interval; one that did not sets it ssu_pct under the median of the
  /// last recent_length measured durations, which also space the starts.
  tracking,
};

std::string_view to_string(DurationRule rule) noexcept;

/// How the Clock Synchronizer estimates an input's clock offset (clock_synchronizer.hpp).
enum class ClockRule {
  /// The paper's Eq. 2: each report's own offset, its arrival time less the interval's end
  /// and the IE's latency (half its median acknowledgement time).
  paper,
  /// Our extension: the smallest offset sample of the last clock_filter_length reports (the
  /// one that queued least, as NTP's clock filter picks the sample of least delay), no
  /// latency subtracted, drift taken over a baseline of 4 × clock_filter_length reports;
  /// until an IE has 2 × clock_filter_length, the median drift of all IEs (the DDE clock's
  /// rate against theirs, which also scales a proposal's whole durations into the DDE clock).
  filtered,
};

std::string_view to_string(ClockRule rule) noexcept;

/// Which compute node builds a time-slice (assigner.hpp).
enum class Assignment {
  /// Time-slice t on compute node t mod M, whatever the nodes' load (FLESnet, the DFS paper).
  fixed,
  /// A coordinator (the DDE) gives each interval's time-slices to the compute nodes by the
  /// room the inputs found in their buffers (Assigner): a full or slow node gets fewer, a
  /// lost one none. The inputs wait for an interval's assignment before sending into it.
  load,
};

std::string_view to_string(Assignment assignment) noexcept;

/// What SchedulerConfig::timeslices_per_interval = 0 stands for, before rounding down to
/// whole rounds: the paper's interval.
inline constexpr std::uint64_t automatic_timeslices_per_interval = 10'000;

struct SchedulerConfig {
  std::uint32_t input_count = 0;    ///< N input nodes (IEs); required, ≥ 1
  std::uint32_t compute_count = 0;  ///< M compute nodes; required, ≥ 1

  /// ts_per_intvl. A round is one contribution to each compute node (M time-slices), so an
  /// interval holds rounds_per_interval() = timeslices_per_interval / M whole rounds. Must be
  /// a multiple of M: validate() refuses a remainder (the paper's code dropped it silently).
  /// 0 (the default): automatic_timeslices_per_interval rounded down to whole rounds, at
  /// least one (9,999 for M = 3), so that the default holds for every M.
  std::uint64_t timeslices_per_interval = 0;

  /// hist_cnt: complete intervals the Proposer and the Clock Synchronizer look back on. Under
  /// the paper's rule a DDE proposes only once it holds this many consecutive complete
  /// intervals (under the tracking rule: proposal_window() of them), so the first intervals
  /// run without proposals and a restarted DDE stays silent as long.
  std::uint32_t history_length = 10;

  /// ssu_TH: staged speed-up applies when VAR (the paper's Eq. 1, over the deviations
  /// |durm_i - durp_i| expressed in percent of med_durm_hist) is at most this, in %².
  double speed_up_variance_threshold = 10.0;

  /// ssu_pct: the staged speed-up shortens the proposed duration by this percentage, (0, 100).
  double speed_up_percent = 5.0;

  /// The Proposer's rule for durations (see DurationRule); `paper` reproduces the paper.
  DurationRule duration_rule = DurationRule::tracking;
  /// tracking: how many of the latest complete intervals the measured duration is the median
  /// of, ≥ 1 (at most history_length of them count).
  std::uint32_t recent_length = 3;
  /// tracking: no step down after an interval whose median acknowledgement latency rose by
  /// more than ssu_pct over the interval before (our extension 6): the slack the rule reads
  /// as room is then a queue the pace is building. false: the rule as before it.
  bool hold_on_rising_latency = true;
  /// tracking: after an interval w that kept up, the step down doubles for each earlier
  /// interval of w's chain (proposal_distance apart) that kept up while its successor's
  /// measured duration fell with its proposal (our extension 8): the network follows, so it
  /// has more room than one step. false: single steps.
  bool faster_recovery = true;

  /// The safety net (our extension 7, fallback_guard.hpp): the DDE switches to best-effort
  /// for a while when paced intervals take longer than best-effort ones. false: the paper.
  bool fallback = true;
  /// How much longer (fraction) the paced intervals' median duration may be than the
  /// best-effort reference before the guard engages, [0, 1].
  double fallback_margin = 0.02;
  /// How many intervals each median of the guard is taken over, ≥ 1.
  std::uint32_t fallback_window = 3;
  /// Intervals the guard runs best-effort before pacing tries again, ≥ 1; doubles (up to 8×)
  /// while retries lose at once.
  std::uint32_t fallback_hold = 8;
  /// Pacing that resumes after a fallback run starts from the last steady proposal before
  /// it, not from the fallback's intervals (our extension 11, pacing_resume.hpp); with
  /// `fallback` and fixed assignment only. false (or either of those off): from the
  /// fallback's intervals, as the tracking rule reads any.
  bool resume_from_pacing = true;
  /// The safety net's spread rule (our extension 10): best-effort while the best-effort
  /// reference's time-slice spread, read off the IEs' probe acknowledgements, is less than a
  /// quarter of what pacing's offsets put between a time-slice's contributions (a round's
  /// (M − 1)/M at the reference's pace). false: the guard looks at durations only.
  bool fallback_on_spread = true;
  /// θ of the spread rule's best-effort intervals (the proposal's `gated`), (0, 1]. At 1 an
  /// input starts the next one on its last acknowledgement, when the network has carried the
  /// whole interval, so the inputs start it together; at ack_threshold each starts on its own
  /// θ·n-th, a few hundred µs from the others (extension 10).
  double gated_ack_threshold = 1.0;

  /// θ: the fraction of an interval's contributions that must be acknowledged before the
  /// Input Engine starts the next interval, (0, 1].
  double ack_threshold = 0.95;

  /// k - j: an IE that reports interval j asks for the proposal of interval j + distance
  /// (the paper: k ≥ j + 2). The DDE computes that proposal from the history up to
  /// interval k - distance, whatever else it holds, so replicas agree.
  std::uint32_t proposal_distance = 2;

  /// Offset-based round-robin: in every round, input i sends first to compute node
  /// (i + round_offset) mod M and then to the following ones.
  std::uint32_t round_offset = 0;

  /// The largest clock drift the Clock Synchronizer believes, as a fraction (500e-6 = 500 ppm,
  /// the frequency tolerance NTP assumes of a computer's clock), [0, 0.5]. Real clocks drift
  /// by parts per million; a larger estimate is the reports' queueing and receive-time
  /// jitter, which, extrapolated over the intervals to a proposal, puts its start off by
  /// milliseconds. The drift estimate is clamped to ±max_clock_drift.
  double max_clock_drift = 500e-6;

  /// The Clock Synchronizer's rule (see ClockRule); `paper` reproduces the paper.
  ClockRule clock_rule = ClockRule::filtered;
  /// filtered: how many of an IE's latest reports its offset is the smallest sample of, ≥ 1.
  std::uint32_t clock_filter_length = 8;
  /// filtered: every IE also sends a clock sample as each interval starts (extension 9,
  /// InputEngine::take_clock_sample): the DDE's filter then holds samples taken where the
  /// queues are short, not only at the intervals' ends where they are long (FIFO ports).
  bool clock_start_samples = true;

  /// Which compute node builds a time-slice (see Assignment); equal on every node.
  Assignment assignment = Assignment::fixed;

  /// The consecutive complete intervals a proposal is computed from: history_length under the
  /// paper's rule (Eq. 1 takes the variance over them), min(recent_length, history_length)
  /// under the tracking rule, which reads no further back. So tracking proposes from the
  /// (recent_length + proposal_distance)-th interval on (the 5th by default, the paper's rule
  /// the 12th): fewer intervals run best-effort, whose sends may bunch up at scale.
  std::uint32_t proposal_window() const noexcept {
    if (duration_rule == DurationRule::paper) return history_length;
    return recent_length < history_length ? recent_length : history_length;
  }

  std::uint64_t rounds_per_interval() const noexcept {
    if (timeslices_per_interval != 0) return timeslices_per_interval / compute_count;
    return automatic_timeslices_per_interval > compute_count ? automatic_timeslices_per_interval / compute_count : 1;
  }
  std::uint64_t timeslices_in_interval() const noexcept { return rounds_per_interval() * compute_count; }
};

/// Throws netio::Error(Errc::invalid_option) naming the first bad field and its
/// value: counts of 0, fewer time-slices per interval than compute nodes or not a multiple of
/// them, history_length 0,
/// thresholds or percentages out of range, proposal_distance < 2.
void validate(const SchedulerConfig& config);

}  // namespace netio::scheduler
