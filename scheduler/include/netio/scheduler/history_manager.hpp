// SPDX-License-Identifier: MIT
/// @file
/// The DDE's History Manager: the measured meta-data of every interval from every IE, and the
/// unified meta-data of complete intervals.
///
/// The caller feeds each IE's measured start (already converted to the local clock by the
/// ClockSynchronizer), duration and the proposed duration it paced by. An interval is complete
/// when all input_count IEs reported it; its unified meta-data is the average start time and
/// the median duration over the IEs (and the median of the proposed durations the IEs had,
/// none when no IE had one). The result does not depend on the order in which the reports
/// arrive.
///
/// Inputs on standby (input_membership.hpp, here over intervals): interval j is complete when
/// every input that is a member at j reported it; a standby input is one from the interval
/// it joins at (join(), told before any report of that interval or later: the inputs carry
/// it in-band ahead of those reports, so replicas count the same inputs in every interval).
///
/// Memory is bounded: the newest `retained` complete intervals are kept, and an interval that
/// some IE never reports (it died, or this DDE started after the report went out) is
/// forgotten once it is `retained` intervals older than the newest report.
#pragma once

#include "netio/scheduler/input_membership.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace netio::scheduler {

struct MeasuredInterval {
  IntervalIndex interval = 0;
  Time start{0};  ///< local clock
  Duration duration{0};
  std::optional<Duration> proposed_duration;
  Duration ack_latency{0};                   ///< the IE's median send → acknowledgement time
  std::optional<Time> probe_acknowledged{};  ///< local clock: the probe time-slice's acknowledgement
};

struct UnifiedInterval {
  IntervalIndex interval = 0;
  Time start{0};                              ///< avg_tm: average over the IEs, local clock
  Duration duration{0};                       ///< med_durm: median over the IEs
  std::optional<Duration> proposed_duration;  ///< median of the durp the IEs paced by
  Duration ack_latency{0};                    ///< median over the IEs of their median acknowledgement latency
  /// The latest minus the earliest of the IEs' probe acknowledgements (extension 10): the
  /// probe time-slice's spread as the inputs see it. None unless every IE measured one.
  std::optional<Duration> probe_spread{};

  Time end() const { return start + duration; }
  friend bool operator==(const UnifiedInterval&, const UnifiedInterval&) = default;
};

class HistoryManager {
 public:
  /// input_count and retained ≥ 1; `standby`: inputs that report nothing until they join.
  HistoryManager(std::uint32_t input_count, std::uint32_t retained, const std::vector<InputIndex>& standby = {});

  /// IE i's report. Returns the unified interval when this report completed it. A second
  /// report of the same IE for the same interval, a report for a complete interval and one
  /// for an interval forgotten already are ignored (nullopt). Throws netio::Error
  /// (Errc::invalid_option) for i out of range, or not a member at that interval (standby).
  std::optional<UnifiedInterval> add(InputIndex i, const MeasuredInterval& measured);

  /// Standby input i reports from interval `from` on. True when new. Throws netio::Error
  /// (Errc::invalid_option) as InputMembership::join() does, and when an interval at or
  /// after `from` is complete already (without i: too late to count it the same everywhere).
  bool join(InputIndex i, IntervalIndex from);
  const InputMembership& inputs() const noexcept { return inputs_; }

  std::optional<IntervalIndex> last_complete() const;
  const UnifiedInterval* find(IntervalIndex interval) const;  ///< complete intervals only
  /// The `count` complete intervals ending with w (w-count+1 .. w), oldest first, when every
  /// one of them is held; otherwise empty.
  std::vector<UnifiedInterval> window(IntervalIndex w, std::size_t count) const;
  std::size_t pending_intervals() const noexcept { return pending_.size(); }

 private:
  void forget_old(IntervalIndex newest_report);

  std::uint32_t input_count_;
  std::uint32_t retained_;
  InputMembership inputs_;  // over intervals
  std::map<IntervalIndex, std::map<InputIndex, MeasuredInterval>> pending_;
  std::map<IntervalIndex, UnifiedInterval> complete_;
  std::optional<IntervalIndex> newest_report_;
};

}  // namespace netio::scheduler
