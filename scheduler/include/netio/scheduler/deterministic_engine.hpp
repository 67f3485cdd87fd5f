// SPDX-License-Identifier: MIT
/// @file
/// The Distributed Deterministic Engine (DDE): History Manager, Clock Synchronizer and
/// Proposer together, driven by the control messages that arrive at one compute node.
///
/// The driver feeds every meta-data report with the local time it arrived, and every
/// proposal request; both calls return the proposals to send now, each addressed to one IE
/// and already in that IE's clock. Nothing else happens by itself: no timers, no clock.
///
/// Determinism: the proposal of interval k is computed from the proposal_window() complete
/// intervals (config.hpp) ending with w = k - proposal_distance, never from whatever else this DDE holds.
/// A request that comes before interval w is complete waits and is answered when w completes
/// (every one, in order: an IE that runs ahead of the others asks again before its first
/// request's window is complete). Each report's start enters the
/// history shifted by the offset computed from that same report (Eq. 2), so the history
/// depends only on the reports and their arrival times. Replicas fed the same reports thus
/// hold the same history and propose the same start and duration in the DDE clock, whatever
/// the arrival order; a DDE started late proposes nothing until it holds proposal_window()
/// consecutive complete intervals, and then the same. (What each IE receives is that start
/// converted with the IE's offset and drift, which a late replica has estimated from fewer
/// reports: equal when the clocks do not drift, otherwise within the drift's error.)
///
/// With the filtered clock rule (the default, ClockRule in config.hpp) an offset is the
/// least-queued sample of the IE's last clock_filter_length reports, so the history depends
/// on those reports' arrival times too, still on nothing else. Replicas whose reports queue
/// differently agree as closely as their least-queued reports do (a constant difference, a
/// replica farther away, cancels); a late replica agrees once it has clock_filter_length
/// reports of every IE. Under that rule a proposal's start, whole measured durations (IE
/// clocks) after w's end (local clock), is that distance at the local clock's rate
/// (1 + ClockSynchronizer::common_drift()), so that replicas whose clocks run at different
/// rates propose the same instant; the common drift rests on every IE's latest reports.
#pragma once

#include "netio/scheduler/clock_synchronizer.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/fallback_guard.hpp"
#include "netio/scheduler/history_manager.hpp"
#include "netio/scheduler/pacing_resume.hpp"
#include "netio/scheduler/proposer.hpp"

#include <deque>
#include <optional>
#include <vector>

namespace netio::scheduler {

struct AddressedProposal {
  InputIndex input = 0;
  Proposal proposal;  ///< in that IE's clock

  friend bool operator==(const AddressedProposal&, const AddressedProposal&) = default;
};

class DeterministicEngine {
 public:
  /// Validates config; `standby_inputs`: inputs that report nothing until they join
  /// (on_input_joins(); HistoryManager counts each from its interval on).
  explicit DeterministicEngine(const SchedulerConfig& config, const std::vector<InputIndex>& standby_inputs = {});

  /// Standby input i reports from interval `from` on (HistoryManager::join()). True when new;
  /// throws netio::Error (Errc::invalid_option) as HistoryManager::join() does.
  bool on_input_joins(InputIndex i, IntervalIndex from) { return history_.join(i, from); }

  /// A report arrived at local time received_at. Throws netio::Error (Errc::invalid_option) for
  /// an input out of range. Returns the proposals of waiting requests it made possible. A
  /// report not newer than the IE's last one is ignored. The DDE keeps the newest
  /// 2 * history_length + proposal_distance complete intervals.
  std::vector<AddressedProposal> on_report(const MetadataReport& report, Time received_at);
  /// A request arrived. Returns its proposal when it can be computed now; nothing when it has
  /// to wait for interval k - proposal_distance, or can never be answered (too old, k too
  /// small, or the history lacks an interval of the window).
  std::vector<AddressedProposal> on_request(const ProposalRequest& request);

  /// A clock probe of the start handshake arrived at local time received_at: returns the echo
  /// to send back. A probe carrying the round trip of the previous one sets the IE's initial
  /// offset (ClockSynchronizer::on_handshake). Throws (Errc::invalid_option) for an input out of range.
  ClockEcho on_clock_probe(const ClockProbe& probe, Time received_at);
  /// An interval-start clock sample (ClockProbe::sample, extension 9) arrived at local time
  /// received_at: one more sample for the Clock Synchronizer; nothing to answer. Throws
  /// (Errc::invalid_option) for an input out of range or a probe that is not a sample.
  void on_clock_sample(const ClockProbe& sample, Time received_at);

  /// The duration rule's proposal of interval k in this DDE's clock, when the history allows
  /// it now: as the rule computes it, before the safety net decides k and before the resumed
  /// pace's bound (extension 11); what the IEs are sent is answer()'s, which applies both.
  std::optional<ProposedInterval> proposal(IntervalIndex k) const;

  const HistoryManager& history() const noexcept { return history_; }
  const ClockSynchronizer& clocks() const noexcept { return clocks_; }
  /// The safety net (extension 7): whether and how often it switched to best-effort. A
  /// proposal of an interval it decided best-effort carries Proposal::best_effort.
  const FallbackGuard& fallback() const noexcept { return guard_; }

 private:
  void check_input(InputIndex i) const;
  std::optional<AddressedProposal> answer(InputIndex i, IntervalIndex k);

  SchedulerConfig config_;
  ClockSynchronizer clocks_;
  HistoryManager history_;
  Proposer proposer_;
  FallbackGuard guard_;
  PacingResume resume_;
  std::vector<std::deque<IntervalIndex>> waiting_;  ///< per IE: the intervals it asked for, oldest first
  struct ProbeSeen {
    std::uint32_t sequence = 0;
    Time sent_at{0};      ///< IE clock
    Time received_at{0};  ///< local clock
  };
  std::vector<std::optional<ProbeSeen>> last_probe_;  ///< per IE
};

}  // namespace netio::scheduler
